//! kiln from Rust: a safe wrapper of kiln's C API (`include/kiln/kiln.h`, through `kiln-sys`).
//!
//! kiln fuses graphs of ops into CUDA kernels that it compiles with NVRTC at run time and keeps
//! in a disk cache: there is no kernel build step. An [`Engine`] is a device (or an offline arch,
//! to compile without a GPU); a [`Graph`] is built node by node or read from JSON; a [`Plan`] is
//! the graph fused into kernels, compiled on an engine and run on [`TensorView`]s of device
//! memory ([`Buffer`]s allocated through the engine, or memory of another library). Every call
//! returns `Result<_, Error>`, the error carrying kiln's class and message. Handles are freed on
//! drop.
//!
//! ```no_run
//! use kiln::{Arg, Cache, DType, Engine, Graph, Plan};
//! # fn main() -> kiln::Result<()> {
//! let mut g = Graph::new()?;
//! let x = g.input("x", &[32, 1024], DType::F32)?;
//! let h = g.add("mul", &[Arg::Node(x), Arg::Scalar(0.5)])?;
//! let y = g.add_with("softmax", &[h.into()], Some(r#"{"axis": 1}"#), Some("y"))?;
//! g.output(y, None)?;
//! let plan = Plan::new(&g, true)?;
//! let mut engine = Engine::new(0, Cache::Default)?;
//! let xs = engine.upload(&vec![1.0f32; 32 * 1024])?;
//! let ys = engine.alloc(32 * 1024 * 4)?;
//! let shape = [32, 1024];
//! plan.run(&mut engine, &[("x", xs.view(DType::F32, &shape)?)], &[("y", ys.view(DType::F32, &shape)?)])?;
//! let y: Vec<f32> = ys.to_vec()?;
//! # Ok(()) }
//! ```
mod dtype;
mod engine;
mod error;
mod graph;
mod plan;
mod tensor;

pub use dtype::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, DType};
pub use engine::{Buffer, Cache, CacheStats, Engine, Plain};
pub use error::{Error, ErrorClass, Result};
pub use graph::{precompile, Arg, Graph, Node, Operand, Template};
pub use kiln_sys as sys;
pub use plan::{Call, Plan};
pub use tensor::TensorView;

/// The library's ABI number; the crate was written for `sys::KILN_ABI_VERSION`.
pub fn version() -> i32 {
    unsafe { sys::kiln_version() }
}

/// True when a CUDA driver loads and reports a device.
pub fn gpu_available() -> bool {
    unsafe { sys::kiln_gpu_available() != 0 }
}

// The README's example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
