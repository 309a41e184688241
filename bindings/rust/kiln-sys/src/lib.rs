//! Raw declarations of kiln's C API, `include/kiln/kiln.h`, written by hand (the test
//! `tests/header.rs` checks them against the header: every function declared, every struct's
//! size and offsets). Every function returning `kiln_status` follows the header's contract: on
//! failure `kiln_last_error()` holds the message of the calling thread's last failure.
//!
//! The safe wrapper is the `kiln` crate; see its README for building and linking.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_double, c_int, c_void};

/// `KILN_ABI_VERSION` of the header these declarations match.
pub const KILN_ABI_VERSION: i32 = 1;

/// A C enum: kept as its integer so that a code this crate does not know is no undefined
/// behaviour.
pub type kiln_status = c_int;
pub const KILN_OK: kiln_status = 0;
pub const KILN_ERROR_ARGUMENT: kiln_status = 1;
pub const KILN_ERROR_SHAPE: kiln_status = 2;
pub const KILN_ERROR_DTYPE: kiln_status = 3;
pub const KILN_ERROR_GRAPH: kiln_status = 4;
pub const KILN_ERROR_COMPILE: kiln_status = 5;
pub const KILN_ERROR_CUDA: kiln_status = 6;
pub const KILN_ERROR_CACHE: kiln_status = 7;
pub const KILN_ERROR_OUT_OF_MEMORY: kiln_status = 8;
pub const KILN_ERROR_INTERNAL: kiln_status = 9;

pub type kiln_dtype = c_int;
pub const KILN_F32: kiln_dtype = 0;
pub const KILN_F16: kiln_dtype = 1;
pub const KILN_BF16: kiln_dtype = 2;
pub const KILN_BOOL: kiln_dtype = 3;
pub const KILN_I32: kiln_dtype = 4;
pub const KILN_I64: kiln_dtype = 5;

/// Opaque handles: only pointers to them exist.
#[repr(C)]
pub struct kiln_engine {
    _private: [u8; 0],
}
#[repr(C)]
pub struct kiln_graph {
    _private: [u8; 0],
}
#[repr(C)]
pub struct kiln_plan {
    _private: [u8; 0],
}
#[repr(C)]
pub struct kiln_template {
    _private: [u8; 0],
}
#[repr(C)]
pub struct kiln_buffer {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kiln_tensor {
    pub data: u64,
    pub byte_offset: u64,
    pub dtype: i32,
    pub rank: i32,
    pub shape: *const i64,
    pub strides: *const i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kiln_arg {
    pub is_scalar: i32,
    pub node: i32,
    pub scalar: c_double,
}

/// The header's `static inline kiln_node()`.
pub fn kiln_node(node: i32) -> kiln_arg {
    kiln_arg { is_scalar: 0, node, scalar: 0.0 }
}
/// The header's `static inline kiln_scalar()`.
pub fn kiln_scalar(value: f64) -> kiln_arg {
    kiln_arg { is_scalar: 1, node: -1, scalar: value }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kiln_operand {
    pub is_scalar: i32,
    pub tensor: kiln_tensor,
    pub scalar: c_double,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct kiln_cache_stats {
    pub compiles: u64,
    pub memory_hits: u64,
    pub bundle_hits: u64,
    pub disk_hits: u64,
    pub bad_entries: u64,
    pub compile_ms: c_double,
    pub remote_hits: u64,
    pub remote_misses: u64,
    pub remote_refused: u64,
    pub remote_errors: u64,
    pub remote_waits: u64,
}

extern "C" {
    pub fn kiln_version() -> i32;
    pub fn kiln_last_error() -> *const c_char;
    pub fn kiln_last_error_class() -> kiln_status;
    pub fn kiln_status_name(status: kiln_status) -> *const c_char;
    pub fn kiln_gpu_available() -> c_int;

    pub fn kiln_engine_create(
        device: i32,
        cache_dir: *const c_char,
        out: *mut *mut kiln_engine,
    ) -> kiln_status;
    pub fn kiln_engine_create_offline(
        arch: *const c_char,
        cache_dir: *const c_char,
        out: *mut *mut kiln_engine,
    ) -> kiln_status;
    pub fn kiln_engine_destroy(engine: *mut kiln_engine) -> kiln_status;
    pub fn kiln_engine_arch(engine: *const kiln_engine, out: *mut *const c_char) -> kiln_status;
    pub fn kiln_engine_set_stream(engine: *mut kiln_engine, stream: *mut c_void) -> kiln_status;
    pub fn kiln_engine_use_own_stream(engine: *mut kiln_engine) -> kiln_status;
    pub fn kiln_engine_synchronize(engine: *mut kiln_engine) -> kiln_status;
    pub fn kiln_engine_cache_stats(engine: *const kiln_engine, out: *mut kiln_cache_stats) -> kiln_status;

    pub fn kiln_buffer_create(
        engine: *mut kiln_engine,
        bytes: usize,
        out: *mut *mut kiln_buffer,
    ) -> kiln_status;
    pub fn kiln_buffer_destroy(buffer: *mut kiln_buffer) -> kiln_status;
    pub fn kiln_buffer_data(buffer: *const kiln_buffer, data: *mut u64, bytes: *mut usize) -> kiln_status;
    pub fn kiln_buffer_write(buffer: *mut kiln_buffer, src: *const c_void, bytes: usize) -> kiln_status;
    pub fn kiln_buffer_read(buffer: *const kiln_buffer, dst: *mut c_void, bytes: usize) -> kiln_status;

    pub fn kiln_graph_create(out: *mut *mut kiln_graph) -> kiln_status;
    pub fn kiln_graph_from_json(json: *const c_char, out: *mut *mut kiln_graph) -> kiln_status;
    pub fn kiln_graph_destroy(graph: *mut kiln_graph) -> kiln_status;
    pub fn kiln_graph_input(
        graph: *mut kiln_graph,
        name: *const c_char,
        shape: *const i64,
        rank: i32,
        dtype: i32,
        node: *mut i32,
    ) -> kiln_status;
    pub fn kiln_graph_add(
        graph: *mut kiln_graph,
        op: *const c_char,
        args: *const kiln_arg,
        n_args: usize,
        attrs_json: *const c_char,
        name: *const c_char,
        node: *mut i32,
    ) -> kiln_status;
    pub fn kiln_graph_output(graph: *mut kiln_graph, node: i32, name: *const c_char) -> kiln_status;
    pub fn kiln_graph_to_json(
        graph: *const kiln_graph,
        buf: *mut c_char,
        cap: usize,
        len: *mut usize,
    ) -> kiln_status;

    pub fn kiln_plan_create(graph: *const kiln_graph, fuse: c_int, out: *mut *mut kiln_plan) -> kiln_status;
    pub fn kiln_plan_destroy(plan: *mut kiln_plan) -> kiln_status;
    pub fn kiln_plan_compile(
        plan: *const kiln_plan,
        engine: *mut kiln_engine,
        kernels: *mut usize,
    ) -> kiln_status;
    pub fn kiln_plan_run(
        plan: *const kiln_plan,
        engine: *mut kiln_engine,
        input_names: *const *const c_char,
        inputs: *const kiln_tensor,
        n_inputs: usize,
        output_names: *const *const c_char,
        outputs: *const kiln_tensor,
        n_outputs: usize,
        stream: *mut c_void,
    ) -> kiln_status;
    pub fn kiln_plan_output(
        plan: *const kiln_plan,
        input_names: *const *const c_char,
        inputs: *const kiln_tensor,
        n_inputs: usize,
        name: *const c_char,
        dtype: *mut i32,
        rank: *mut i32,
        shape: *mut i64,
        max_rank: i32,
    ) -> kiln_status;
    pub fn kiln_plan_replay(
        plan: *const kiln_plan,
        engine: *mut kiln_engine,
        input_names: *const *const c_char,
        inputs: *const kiln_tensor,
        n_inputs: usize,
        output_names: *const *const c_char,
        outputs: *const kiln_tensor,
        n_outputs: usize,
        stream: *mut c_void,
    ) -> kiln_status;

    pub fn kiln_precompile(
        graph: *const kiln_graph,
        arch: *const c_char,
        cache_dir: *const c_char,
        stats: *mut kiln_cache_stats,
    ) -> kiln_status;
    pub fn kiln_tune(
        engine: *mut kiln_engine,
        graph: *const kiln_graph,
        budget_s: c_double,
        tuned: *mut usize,
    ) -> kiln_status;

    pub fn kiln_template_from_json(json: *const c_char, out: *mut *mut kiln_template) -> kiln_status;
    pub fn kiln_template_destroy(t: *mut kiln_template) -> kiln_status;
    pub fn kiln_template_launch(
        engine: *mut kiln_engine,
        t: *const kiln_template,
        args: *const kiln_operand,
        n_args: usize,
        tunables_json: *const c_char,
    ) -> kiln_status;
    pub fn kiln_template_precompile(
        engine: *mut kiln_engine,
        t: *const kiln_template,
        args: *const kiln_operand,
        n_args: usize,
        tunables_json: *const c_char,
    ) -> kiln_status;
    pub fn kiln_graph_define_template(
        graph: *mut kiln_graph,
        name: *const c_char,
        t: *const kiln_template,
    ) -> kiln_status;
}
