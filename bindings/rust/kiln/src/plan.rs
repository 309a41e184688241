//! Plans: a graph fused into kernels, compiled on an engine (offline too) and run on views.
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{c_string, check, Error, ErrorClass, Result};
use crate::graph::Graph;
use crate::tensor::{with_raw, TensorView};
use kiln_sys as sys;
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::ptr::{null_mut, NonNull};
use std::sync::Arc;

/// The handle, shared by a plan and its calls.
struct RawPlan(NonNull<sys::kiln_plan>);

impl Drop for RawPlan {
    fn drop(&mut self) {
        unsafe { sys::kiln_plan_destroy(self.0.as_ptr()) };
    }
}

// SAFETY: kiln::Plan's calls are const and lock what they share (its prepared calls, its arenas
// per engine); the engine a call runs on is &mut.
unsafe impl Send for RawPlan {}
unsafe impl Sync for RawPlan {}

/// A graph fused into kernels. Send and Sync (kiln::Plan's calls lock what they share); clones
/// share the plan.
#[derive(Clone)]
pub struct Plan {
    raw: Arc<RawPlan>,
}

type RunFn = unsafe extern "C" fn(
    *const sys::kiln_plan,
    *mut sys::kiln_engine,
    *const *const c_char,
    *const sys::kiln_tensor,
    usize,
    *const *const c_char,
    *const sys::kiln_tensor,
    usize,
    *mut c_void,
) -> sys::kiln_status;

impl Plan {
    /// Fuses `graph` (`fuse` false: one kernel per op). The plan keeps its own copy.
    pub fn new(graph: &Graph, fuse: bool) -> Result<Plan> {
        let mut raw = null_mut();
        check(unsafe { sys::kiln_plan_create(graph.as_raw(), fuse as i32, &mut raw) })?;
        Ok(Plan { raw: Arc::new(RawPlan(NonNull::new(raw).expect("kiln_plan_create gave NULL"))) })
    }

    pub fn as_raw(&self) -> *const sys::kiln_plan {
        self.raw.0.as_ptr()
    }

    /// Compiles every kernel (or finds it cached), on an offline engine too; the kernel count.
    pub fn compile(&self, engine: &mut Engine) -> Result<usize> {
        let mut n = 0;
        check(unsafe { sys::kiln_plan_compile(self.raw.0.as_ptr(), engine.as_raw(), &mut n) })?;
        Ok(n)
    }

    /// The dtype and shape of output `name` of a run on `inputs` (planning views will do):
    /// what to allocate. Needs no GPU.
    pub fn output(&self, inputs: &[(&str, TensorView<'_>)], name: &str) -> Result<(DType, Vec<i64>)> {
        let names = Names::new(inputs.iter().map(|(n, _)| *n), "input name")?;
        let views: Vec<TensorView<'_>> = inputs.iter().map(|(_, v)| *v).collect();
        let wanted = c_string(name, "output name")?;
        let (mut dtype, mut rank) = (0, 0);
        let mut shape = [0i64; 16];
        with_raw(&views, |raw| {
            check(unsafe {
                sys::kiln_plan_output(
                    self.raw.0.as_ptr(),
                    names.ptrs.as_ptr(),
                    raw.as_ptr(),
                    raw.len(),
                    wanted.as_ptr(),
                    &mut dtype,
                    &mut rank,
                    shape.as_mut_ptr(),
                    shape.len() as i32,
                )
            })
        })?;
        let dtype = DType::from_code(dtype).ok_or_else(|| {
            Error::new(ErrorClass::Internal, format!("kiln_plan_output gave dtype code {}", dtype))
        })?;
        Ok((dtype, shape[..rank as usize].to_vec()))
    }

    /// Runs the plan on `engine`'s stream: inputs and outputs by name (every output of the
    /// graph given). Makes the names' C strings on each call: `Plan::call` keeps them.
    pub fn run(
        &self,
        engine: &mut Engine,
        inputs: &[(&str, TensorView<'_>)],
        outputs: &[(&str, TensorView<'_>)],
    ) -> Result<()> {
        let call = self.call(
            &inputs.iter().map(|p| p.0).collect::<Vec<_>>(),
            &outputs.iter().map(|p| p.0).collect::<Vec<_>>(),
        )?;
        let ins: Vec<TensorView<'_>> = inputs.iter().map(|p| p.1).collect();
        let outs: Vec<TensorView<'_>> = outputs.iter().map(|p| p.1).collect();
        call.run(engine, &ins, &outs)
    }

    /// A call signature: the input and output names, as C strings made once, for runs that
    /// pass only views (the hot path).
    pub fn call(&self, inputs: &[&str], outputs: &[&str]) -> Result<Call> {
        Ok(Call {
            plan: self.raw.clone(),
            inputs: Names::new(inputs.iter().copied(), "input name")?,
            outputs: Names::new(outputs.iter().copied(), "output name")?,
        })
    }
}

/// Names as C strings and the array of their pointers.
struct Names {
    _owned: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

impl Names {
    fn new<'a>(names: impl Iterator<Item = &'a str>, what: &str) -> Result<Names> {
        let owned = names.map(|n| c_string(n, what)).collect::<Result<Vec<_>>>()?;
        let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
        Ok(Names { _owned: owned, ptrs })
    }
}

/// A plan with its input and output names bound: `run` and `replay` take views in that order.
/// It shares the plan (which may be dropped first).
pub struct Call {
    plan: Arc<RawPlan>,
    inputs: Names,
    outputs: Names,
}

impl Call {
    /// Runs the plan on the engine's stream.
    pub fn run(
        &self,
        engine: &mut Engine,
        inputs: &[TensorView<'_>],
        outputs: &[TensorView<'_>],
    ) -> Result<()> {
        self.invoke(sys::kiln_plan_run, engine, inputs, outputs, null_mut())
    }

    /// Runs through a CUDA graph built at the first call and replayed after.
    pub fn replay(
        &self,
        engine: &mut Engine,
        inputs: &[TensorView<'_>],
        outputs: &[TensorView<'_>],
    ) -> Result<()> {
        self.invoke(sys::kiln_plan_replay, engine, inputs, outputs, null_mut())
    }

    /// Runs the plan on `stream` for this call.
    ///
    /// # Safety
    /// `stream` is a live CUstream of the engine's device.
    pub unsafe fn run_on(
        &self,
        engine: &mut Engine,
        inputs: &[TensorView<'_>],
        outputs: &[TensorView<'_>],
        stream: *mut c_void,
    ) -> Result<()> {
        self.invoke(sys::kiln_plan_run, engine, inputs, outputs, stream)
    }

    fn invoke(
        &self,
        f: RunFn,
        engine: &mut Engine,
        inputs: &[TensorView<'_>],
        outputs: &[TensorView<'_>],
        stream: *mut c_void,
    ) -> Result<()> {
        if inputs.len() != self.inputs.ptrs.len() || outputs.len() != self.outputs.ptrs.len() {
            return Err(Error::new(
                ErrorClass::Argument,
                format!(
                    "the call names {} inputs and {} outputs but got {} and {} views",
                    self.inputs.ptrs.len(),
                    self.outputs.ptrs.len(),
                    inputs.len(),
                    outputs.len()
                ),
            ));
        }
        with_raw(inputs, |ins| {
            with_raw(outputs, |outs| {
                check(unsafe {
                    f(
                        self.plan.0.as_ptr(),
                        engine.as_raw(),
                        self.inputs.ptrs.as_ptr(),
                        ins.as_ptr(),
                        ins.len(),
                        self.outputs.ptrs.as_ptr(),
                        outs.as_ptr(),
                        outs.len(),
                        stream,
                    )
                })
            })
        })
    }
}
