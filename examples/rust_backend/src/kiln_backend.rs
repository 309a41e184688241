//! The Backend on kiln: every op a plan, made once per signature (op, dtype, shape, scalar) and
//! kept with its bound call; tensors are device memory allocated through kiln (kiln_buffer).
use crate::backend::Backend;
use crate::ops::{self, Op};
use kiln::{Buffer, Cache, Call, DType, Engine, Plan, Result, TensorView};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// A [rows, cols] tensor on the device (a scalar: [1, 1]; the plan's output shape is kept).
pub struct KilnTensor {
    pub buf: Buffer,
    pub dtype: DType,
    pub shape: Vec<i64>,
}

impl KilnTensor {
    pub fn view(&self) -> TensorView<'_> {
        self.buf.view(self.dtype, &self.shape).expect("a tensor's buffer holds its shape")
    }
}

/// What one signature keeps: the plan, its call (names bound), the output's dtype and shape.
pub struct Entry {
    pub plan: Plan,
    pub call: Call,
    pub out_dtype: DType,
    pub out_shape: Vec<i64>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Key {
    Op(Op, DType, Vec<i64>, u32),
    Mlp(DType, [i64; 4]),
}

/// Note: `plans` comes first so that the plans (and their replay graphs) go before the engine
/// they ran on.
pub struct KilnBackend {
    pub dtype: DType,
    plans: RefCell<HashMap<Key, Rc<Entry>>>,
    engine: RefCell<Engine>,
}

impl KilnBackend {
    /// A backend on device 0 whose tensors are `dtype`; kernels cached in kiln's default cache.
    pub fn new(dtype: DType) -> Result<KilnBackend> {
        Ok(KilnBackend {
            dtype,
            engine: RefCell::new(Engine::new(0, Cache::Default)?),
            plans: RefCell::default(),
        })
    }

    pub fn engine(&self) -> std::cell::RefMut<'_, Engine> {
        self.engine.borrow_mut()
    }

    /// How many plans the backend made (one per signature).
    pub fn plan_count(&self) -> usize {
        self.plans.borrow().len()
    }

    /// The entry of `key`, made now from the graph `make` gives (inputs: names and shapes) if new.
    fn entry(
        &self,
        key: Key,
        inputs: &[(&str, Vec<i64>)],
        make: impl FnOnce() -> Result<kiln::Graph>,
    ) -> Result<Rc<Entry>> {
        if let Some(e) = self.plans.borrow().get(&key) {
            return Ok(e.clone());
        }
        let graph = make()?;
        let plan = Plan::new(&graph, true)?;
        plan.compile(&mut self.engine.borrow_mut())?;
        let views: Vec<(&str, TensorView<'_>)> =
            inputs.iter().map(|(n, s)| (*n, TensorView::planning(self.dtype, s))).collect();
        let (out_dtype, out_shape) = plan.output(&views, "out")?;
        let names: Vec<&str> = inputs.iter().map(|p| p.0).collect();
        let call = plan.call(&names, &["out"])?;
        let e = Rc::new(Entry { plan, call, out_dtype, out_shape });
        self.plans.borrow_mut().insert(key, e.clone());
        Ok(e)
    }

    /// The entry of `op` on [rows, cols] tensors (the first input's shape) and `scalar`.
    pub fn op_entry(&self, op: Op, shape: &[i64], scalar: f32) -> Result<Rc<Entry>> {
        let (rows, cols) = (shape[0], shape[1]);
        let key = Key::Op(op, self.dtype, shape.to_vec(), if op.has_scalar() { scalar.to_bits() } else { 0 });
        let inputs: Vec<(&str, Vec<i64>)> = op
            .inputs()
            .iter()
            .map(|&n| (n, if n == "w" || n == "b" { vec![cols] } else { vec![rows, cols] }))
            .collect();
        self.entry(key, &inputs, || ops::graph(op, self.dtype, rows, cols, scalar as f64))
    }

    pub fn mlp_entry(&self, batch: i64, k: i64, hidden: i64, n: i64) -> Result<Rc<Entry>> {
        let key = Key::Mlp(self.dtype, [batch, k, hidden, n]);
        let inputs =
            [("x", vec![batch, k]), ("w1", vec![hidden, k]), ("b1", vec![hidden]), ("w2", vec![n, hidden])];
        self.entry(key, &inputs, || ops::mlp_graph(self.dtype, batch, k, hidden, n))
    }

    fn run(&self, entry: &Entry, inputs: &[&KilnTensor]) -> Result<KilnTensor> {
        let mut engine = self.engine.borrow_mut();
        let bytes = entry.out_shape.iter().product::<i64>() as usize * entry.out_dtype.size();
        let out =
            KilnTensor { buf: engine.alloc(bytes)?, dtype: entry.out_dtype, shape: entry.out_shape.clone() };
        let views: Vec<TensorView<'_>> = inputs.iter().map(|t| t.view()).collect();
        entry.call.run(&mut engine, &views, &[out.view()])?;
        Ok(out)
    }

    fn op(&self, op: Op, inputs: &[&KilnTensor], scalar: f32) -> Result<KilnTensor> {
        let entry = self.op_entry(op, &inputs[0].shape, scalar)?;
        self.run(&entry, inputs)
    }
}

impl Backend for KilnBackend {
    type Storage = KilnTensor;

    fn from_vec(&self, data: &[f32], rows: usize, cols: usize) -> Result<KilnTensor> {
        let mut engine = self.engine.borrow_mut();
        let buf = match self.dtype {
            DType::F32 => engine.upload(data)?,
            DType::F16 => engine.upload(&data.iter().map(|&v| kiln::f32_to_f16(v)).collect::<Vec<_>>())?,
            DType::BF16 => engine.upload(&data.iter().map(|&v| kiln::f32_to_bf16(v)).collect::<Vec<_>>())?,
            t => {
                return Err(kiln::Error::new(
                    kiln::ErrorClass::Dtype,
                    format!("the backend holds floats, not {}", t.name()),
                ))
            }
        };
        // A row of layernorm's weight or bias, or of the MLP's bias, is one-dimensional.
        let shape = if rows == 1 { vec![cols as i64] } else { vec![rows as i64, cols as i64] };
        Ok(KilnTensor { buf, dtype: self.dtype, shape })
    }

    fn to_vec(&self, t: &KilnTensor) -> Result<Vec<f32>> {
        Ok(match t.dtype {
            DType::F16 => t.buf.to_vec::<u16>()?.into_iter().map(kiln::f16_to_f32).collect(),
            DType::BF16 => t.buf.to_vec::<u16>()?.into_iter().map(kiln::bf16_to_f32).collect(),
            _ => t.buf.to_vec::<f32>()?,
        })
    }

    fn add(&self, a: &KilnTensor, b: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Add, &[a, b], 0.0)
    }
    fn sub(&self, a: &KilnTensor, b: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Sub, &[a, b], 0.0)
    }
    fn mul(&self, a: &KilnTensor, b: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Mul, &[a, b], 0.0)
    }
    fn div(&self, a: &KilnTensor, b: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Div, &[a, b], 0.0)
    }
    fn relu(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Relu, &[x], 0.0)
    }
    fn relu_backward(&self, x: &KilnTensor, grad: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::ReluBackward, &[x, grad], 0.0)
    }
    fn sigmoid(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Sigmoid, &[x], 0.0)
    }
    fn gelu(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Gelu, &[x], 0.0)
    }
    fn exp(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Exp, &[x], 0.0)
    }
    fn log(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Log, &[x], 0.0)
    }
    fn powf(&self, x: &KilnTensor, p: f32) -> Result<KilnTensor> {
        self.op(Op::Powf, &[x], p)
    }
    fn softmax(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Softmax, &[x], 0.0)
    }
    fn layernorm(&self, x: &KilnTensor, w: &KilnTensor, b: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Layernorm, &[x, w, b], 0.0)
    }
    fn sum(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Sum, &[x], 0.0)
    }
    fn fill(&self, like: &KilnTensor, value: f32) -> Result<KilnTensor> {
        self.op(Op::Fill, &[like], value)
    }
    fn copy(&self, x: &KilnTensor) -> Result<KilnTensor> {
        self.op(Op::Copy, &[x], 0.0)
    }
    fn scalar_mul(&self, x: &KilnTensor, s: f32) -> Result<KilnTensor> {
        self.op(Op::ScalarMul, &[x], s)
    }
    fn scalar_add(&self, x: &KilnTensor, s: f32) -> Result<KilnTensor> {
        self.op(Op::ScalarAdd, &[x], s)
    }
    fn mlp_forward(
        &self,
        x: &KilnTensor,
        w1: &KilnTensor,
        b1: &KilnTensor,
        w2: &KilnTensor,
    ) -> Result<KilnTensor> {
        let entry = self.mlp_entry(x.shape[0], x.shape[1], w1.shape[0], w2.shape[0])?;
        self.run(&entry, &[x, w1, b1, w2])
    }
}
