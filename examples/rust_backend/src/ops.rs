//! Seed 003's op set as kiln graphs: each op a catalog op or a small graph, its inputs named
//! "x", "y" (binary ops), "grad" (relu_backward), "w" and "b" (layernorm), its output "out".
//! bindings/rust/kiln/tests/ops.rs compiles these very graphs offline.
use kiln::{Arg, DType, Graph, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Relu,
    ReluBackward,
    Sigmoid,
    Gelu,
    Exp,
    Log,
    Powf,
    Softmax,
    Layernorm,
    Sum,
    Fill,
    Copy,
    ScalarMul,
    ScalarAdd,
}

pub const ALL: [Op; 18] = [
    Op::Add,
    Op::Sub,
    Op::Mul,
    Op::Div,
    Op::Relu,
    Op::ReluBackward,
    Op::Sigmoid,
    Op::Gelu,
    Op::Exp,
    Op::Log,
    Op::Powf,
    Op::Softmax,
    Op::Layernorm,
    Op::Sum,
    Op::Fill,
    Op::Copy,
    Op::ScalarMul,
    Op::ScalarAdd,
];

/// layernorm's epsilon, as the seed's kernel.
pub const EPS: f64 = 1e-5;

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Relu => "relu",
            Op::ReluBackward => "relu_backward",
            Op::Sigmoid => "sigmoid",
            Op::Gelu => "gelu",
            Op::Exp => "exp",
            Op::Log => "log",
            Op::Powf => "powf",
            Op::Softmax => "softmax",
            Op::Layernorm => "layernorm",
            Op::Sum => "sum",
            Op::Fill => "fill",
            Op::Copy => "copy",
            Op::ScalarMul => "scalar_mul",
            Op::ScalarAdd => "scalar_add",
        }
    }

    /// The graph's input names, in the order the Backend passes tensors.
    pub fn inputs(self) -> &'static [&'static str] {
        match self {
            Op::Add | Op::Sub | Op::Mul | Op::Div => &["x", "y"],
            Op::ReluBackward => &["x", "grad"],
            Op::Layernorm => &["x", "w", "b"],
            _ => &["x"],
        }
    }

    /// Whether the op takes a scalar (powf's exponent, fill's value, scalar_mul/add's operand).
    pub fn has_scalar(self) -> bool {
        matches!(self, Op::Powf | Op::Fill | Op::ScalarMul | Op::ScalarAdd)
    }
}

/// `op` on [rows, cols] tensors of `dtype` (w and b: [cols]); `scalar` for the ops that take one.
/// sum reduces every element to a scalar; softmax and layernorm work along rows.
pub fn graph(op: Op, dtype: DType, rows: i64, cols: i64, scalar: f64) -> Result<Graph> {
    let mut g = Graph::new()?;
    let shape = [rows, cols];
    let mut ins = Vec::new();
    for &name in op.inputs() {
        let s: &[i64] = if name == "w" || name == "b" { &shape[1..] } else { &shape };
        ins.push(Arg::Node(g.input(name, s, dtype)?));
    }
    let x = ins[0];
    let out = Some("out");
    let node = match op {
        Op::Add | Op::Sub | Op::Mul | Op::Div => g.add_with(op.name(), &ins, None, out)?,
        Op::Relu | Op::Sigmoid | Op::Exp | Op::Log | Op::Copy => g.add_with(op.name(), &[x], None, out)?,
        // The seed's gelu is the tanh approximation.
        Op::Gelu => g.add_with("gelu_tanh", &[x], None, out)?,
        Op::ReluBackward => {
            let positive = g.add("gt", &[x, Arg::Scalar(0.0)])?;
            let grad = g.add("where", &[positive.into(), ins[1], Arg::Scalar(0.0)])?;
            let attrs = format!(r#"{{"dtype": "{}"}}"#, dtype.name());
            g.add_with("cast", &[grad.into()], Some(&attrs), out)?
        }
        Op::Powf => g.add_with("pow", &[x, Arg::Scalar(scalar)], None, out)?,
        Op::Softmax => g.add_with("softmax", &[x], Some(r#"{"axis": 1}"#), out)?,
        Op::Layernorm => {
            let attrs = format!(r#"{{"eps": {:e}}}"#, EPS);
            g.add_with("layer_norm", &ins, Some(&attrs), out)?
        }
        Op::Sum => g.add_with("sum", &[x], Some(r#"{"axis": "all"}"#), out)?,
        Op::Fill => g.add_with("fill", &[x, Arg::Scalar(scalar)], None, out)?,
        Op::ScalarMul => g.add_with("mul", &[x, Arg::Scalar(scalar)], None, out)?,
        Op::ScalarAdd => g.add_with("add", &[x, Arg::Scalar(scalar)], None, out)?,
    };
    g.output(node, None)?;
    Ok(g)
}

/// The fused MLP forward: gelu(x @ w1ᵀ + b1) @ w2ᵀ, x [batch, k], w1 [hidden, k], b1 [hidden],
/// w2 [n, hidden]: one plan.
pub fn mlp_graph(dtype: DType, batch: i64, k: i64, hidden: i64, n: i64) -> Result<Graph> {
    let mut g = Graph::new()?;
    let x = g.input("x", &[batch, k], dtype)?;
    let w1 = g.input("w1", &[hidden, k], dtype)?;
    let b1 = g.input("b1", &[hidden], dtype)?;
    let w2 = g.input("w2", &[n, hidden], dtype)?;
    let h = g.add("linear", &[x.into(), w1.into(), b1.into()])?;
    let a = g.add("gelu_tanh", &[h.into()])?;
    let y = g.add_with("linear", &[a.into(), w2.into()], None, Some("out"))?;
    g.output(y, None)?;
    Ok(g)
}
