//! Graphs of kiln's ops (docs/ops.md), from JSON or built node by node, and users' kernel
//! templates (docs/templates.md).
use crate::dtype::DType;
use crate::engine::{ptr_of, Cache, CacheStats, Engine};
use crate::error::{c_string, check, Error, ErrorClass, Result};
use crate::tensor::{with_raw, TensorView};
use kiln_sys as sys;
use std::ffi::CString;
use std::os::raw::c_char;
use std::ptr::{null_mut, NonNull};

/// A node of a graph: its id, in order of creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node(pub i32);

/// An argument of an op: an earlier node, or a scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    Node(Node),
    Scalar(f64),
}

impl From<Node> for Arg {
    fn from(n: Node) -> Arg {
        Arg::Node(n)
    }
}
impl From<f64> for Arg {
    fn from(x: f64) -> Arg {
        Arg::Scalar(x)
    }
}

impl Arg {
    fn as_raw(self) -> sys::kiln_arg {
        match self {
            Arg::Node(n) => sys::kiln_node(n.0),
            Arg::Scalar(x) => sys::kiln_scalar(x),
        }
    }
}

/// An op graph. Send and Sync: kiln::Graph is a plain value (its const methods only read).
pub struct Graph {
    raw: NonNull<sys::kiln_graph>,
}

unsafe impl Send for Graph {}
unsafe impl Sync for Graph {}

fn opt_c(s: Option<&str>, what: &str) -> Result<Option<CString>> {
    s.map(|s| c_string(s, what)).transpose()
}

impl Graph {
    pub fn new() -> Result<Graph> {
        let mut raw = null_mut();
        check(unsafe { sys::kiln_graph_create(&mut raw) })?;
        Ok(Graph { raw: NonNull::new(raw).expect("kiln_graph_create gave NULL") })
    }

    /// A graph from its JSON text (docs/graph-format.md); a Graph error names the node and field.
    pub fn from_json(json: &str) -> Result<Graph> {
        let text = c_string(json, "graph JSON")?;
        let mut raw = null_mut();
        check(unsafe { sys::kiln_graph_from_json(text.as_ptr(), &mut raw) })?;
        Ok(Graph { raw: NonNull::new(raw).expect("kiln_graph_from_json gave NULL") })
    }

    pub fn as_raw(&self) -> *const sys::kiln_graph {
        self.raw.as_ptr()
    }

    /// An input; an extent of -1 is a dynamic dim.
    pub fn input(&mut self, name: &str, shape: &[i64], dtype: DType) -> Result<Node> {
        let name = c_string(name, "input name")?;
        let rank = i32::try_from(shape.len())
            .map_err(|_| Error::new(ErrorClass::Shape, format!("rank {} is too large", shape.len())))?;
        let mut node = -1;
        check(unsafe {
            sys::kiln_graph_input(
                self.raw.as_ptr(),
                name.as_ptr(),
                shape.as_ptr(),
                rank,
                dtype.code(),
                &mut node,
            )
        })?;
        Ok(Node(node))
    }

    /// Op `op` on `args`, with no attributes, named "t<N>".
    pub fn add(&mut self, op: &str, args: &[Arg]) -> Result<Node> {
        self.add_with(op, args, None, None)
    }

    /// Op `op` on `args`, with attributes as a JSON object (`{"axis": 0}`) and a name.
    pub fn add_with(
        &mut self,
        op: &str,
        args: &[Arg],
        attrs_json: Option<&str>,
        name: Option<&str>,
    ) -> Result<Node> {
        let op = c_string(op, "op")?;
        let attrs = opt_c(attrs_json, "attrs_json")?;
        let name = opt_c(name, "node name")?;
        let raw: Vec<sys::kiln_arg> = args.iter().map(|a| a.as_raw()).collect();
        let mut node = -1;
        check(unsafe {
            sys::kiln_graph_add(
                self.raw.as_ptr(),
                op.as_ptr(),
                raw.as_ptr(),
                raw.len(),
                ptr_of(&attrs),
                ptr_of(&name),
                &mut node,
            )
        })?;
        Ok(Node(node))
    }

    /// Marks `node` as an output, renamed to `name` if given.
    pub fn output(&mut self, node: Node, name: Option<&str>) -> Result<()> {
        let name = opt_c(name, "output name")?;
        check(unsafe { sys::kiln_graph_output(self.raw.as_ptr(), node.0, ptr_of(&name)) })
    }

    pub fn to_json(&self) -> Result<String> {
        let mut len = 0;
        check(unsafe { sys::kiln_graph_to_json(self.raw.as_ptr(), null_mut(), 0, &mut len) })?;
        let mut buf = vec![0u8; len + 1];
        check(unsafe {
            sys::kiln_graph_to_json(self.raw.as_ptr(), buf.as_mut_ptr() as *mut c_char, buf.len(), &mut len)
        })?;
        buf.truncate(len);
        String::from_utf8(buf)
            .map_err(|e| Error::new(ErrorClass::Internal, format!("graph JSON is not UTF-8: {}", e)))
    }

    /// Declares template `t` as op `name` (None: the template's own name).
    pub fn define_template(&mut self, name: Option<&str>, t: &Template) -> Result<()> {
        let name = opt_c(name, "template op name")?;
        check(unsafe { sys::kiln_graph_define_template(self.raw.as_ptr(), ptr_of(&name), t.raw.as_ptr()) })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        unsafe { sys::kiln_graph_destroy(self.raw.as_ptr()) };
    }
}

/// Compiles every kernel of `graph`'s fused plan for `arch` without a GPU into `cache` (what
/// `kiln precompile` does); what the cache counted.
pub fn precompile(graph: &Graph, arch: &str, cache: Cache<'_>) -> Result<CacheStats> {
    let arch = c_string(arch, "arch")?;
    let dir = cache.c_arg()?;
    let mut stats = CacheStats::default();
    check(unsafe { sys::kiln_precompile(graph.as_raw(), arch.as_ptr(), ptr_of(&dir), &mut stats) })?;
    Ok(stats)
}

/// An argument of a template's kernel.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    Tensor(TensorView<'a>),
    Scalar(f64),
}

/// A user's kernel template: one object of graph JSON's "templates". Send and Sync: a plain
/// value once made.
pub struct Template {
    raw: NonNull<sys::kiln_template>,
}

unsafe impl Send for Template {}
unsafe impl Sync for Template {}

impl Template {
    pub fn from_json(json: &str) -> Result<Template> {
        let text = c_string(json, "template JSON")?;
        let mut raw = null_mut();
        check(unsafe { sys::kiln_template_from_json(text.as_ptr(), &mut raw) })?;
        Ok(Template { raw: NonNull::new(raw).expect("kiln_template_from_json gave NULL") })
    }

    fn call(
        &self,
        engine: &mut Engine,
        args: &[Operand<'_>],
        tunables_json: Option<&str>,
        f: unsafe extern "C" fn(
            *mut sys::kiln_engine,
            *const sys::kiln_template,
            *const sys::kiln_operand,
            usize,
            *const c_char,
        ) -> sys::kiln_status,
    ) -> Result<()> {
        let tunables = opt_c(tunables_json, "tunables_json")?;
        let tensors: Vec<TensorView<'_>> = args
            .iter()
            .map(|a| match a {
                Operand::Tensor(t) => *t,
                Operand::Scalar(_) => TensorView::planning(DType::F32, &[]),
            })
            .collect();
        with_raw(&tensors, |raw| {
            let ops: Vec<sys::kiln_operand> = args
                .iter()
                .zip(raw)
                .map(|(a, t)| match a {
                    Operand::Tensor(_) => sys::kiln_operand { is_scalar: 0, tensor: *t, scalar: 0.0 },
                    Operand::Scalar(x) => sys::kiln_operand { is_scalar: 1, tensor: *t, scalar: *x },
                })
                .collect();
            check(unsafe {
                f(engine.as_raw(), self.raw.as_ptr(), ops.as_ptr(), ops.len(), ptr_of(&tunables))
            })
        })
    }

    /// Compiles the kernel `launch` would run (tensors may be planning views), offline too.
    pub fn precompile(
        &self,
        engine: &mut Engine,
        args: &[Operand<'_>],
        tunables_json: Option<&str>,
    ) -> Result<()> {
        self.call(engine, args, tunables_json, sys::kiln_template_precompile)
    }

    /// Launches the template on `args` (its parameters in order) on the engine's stream.
    pub fn launch(
        &self,
        engine: &mut Engine,
        args: &[Operand<'_>],
        tunables_json: Option<&str>,
    ) -> Result<()> {
        self.call(engine, args, tunables_json, sys::kiln_template_launch)
    }
}

impl Drop for Template {
    fn drop(&mut self) {
        unsafe { sys::kiln_template_destroy(self.raw.as_ptr()) };
    }
}
