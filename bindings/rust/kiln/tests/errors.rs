// Every error class: the seven a program can meet, each from a real failure with its message,
// and the mapping of every status code (out of memory and internal cannot be provoked safely).
mod common;

use kiln::{precompile, Arg, Cache, DType, Engine, Error, ErrorClass, Graph, Node, Plan, TensorView};

fn expect_err<T>(r: kiln::Result<T>, class: ErrorClass, needle: &str) -> Error {
    let e = match r {
        Ok(_) => panic!("expected a {:?} error containing '{}'", class, needle),
        Err(e) => e,
    };
    assert_eq!(e.class(), class, "{}", e);
    assert!(e.message().contains(needle), "'{}' does not contain '{}'", e.message(), needle);
    e
}

fn xy_graph() -> Graph {
    let mut g = Graph::new().unwrap();
    let x = g.input("x", &[4, 8], DType::F32).unwrap();
    let y = g.add_with("exp", &[x.into()], None, Some("y")).unwrap();
    g.output(y, None).unwrap();
    g
}

#[test]
fn argument_errors() {
    let mut g = xy_graph();
    expect_err(g.output(Node(99), None), ErrorClass::Argument, "node 99 is not a node of this graph");
    expect_err(g.add("exp", &[Arg::Node(Node(-3))]), ErrorClass::Argument, "node -3");
    expect_err(g.input("a\0b", &[1], DType::F32), ErrorClass::Argument, "NUL byte");
    expect_err(Engine::offline("sm_8", Cache::Memory), ErrorClass::Argument, "bad arch 'sm_8'");
    expect_err(Engine::new(-1, Cache::Memory), ErrorClass::Argument, "device -1 is negative");
    let plan = Plan::new(&g, true).unwrap();
    let call = plan.call(&["x"], &["y"]).unwrap();
    let mut e = Engine::offline("sm_90", Cache::Memory).unwrap();
    let s = [4i64, 8];
    let v = TensorView::planning(DType::F32, &s);
    expect_err(call.run(&mut e, &[v, v], &[v]), ErrorClass::Argument, "names 1 inputs and 1 outputs");
    expect_err(plan.run(&mut e, &[("x", v)], &[]), ErrorClass::Argument, "output 'y' is not given");
    expect_err(plan.output(&[("x", v)], "z"), ErrorClass::Argument, "'z' is not an output");
}

#[test]
fn shape_errors() {
    let mut g = Graph::new().unwrap();
    let a = g.input("a", &[2, 3], DType::F32).unwrap();
    let b = g.input("b", &[4, 5], DType::F32).unwrap();
    expect_err(g.add("add", &[a.into(), b.into()]), ErrorClass::Shape, "add");
    let plan = Plan::new(&xy_graph(), true).unwrap();
    let wrong = [4i64, 9];
    expect_err(
        plan.output(&[("x", TensorView::planning(DType::F32, &wrong))], "y"),
        ErrorClass::Shape,
        "input 'x'",
    );
    let negative = [4i64, -8];
    expect_err(
        plan.output(&[("x", TensorView::planning(DType::F32, &negative))], "y"),
        ErrorClass::Shape,
        "",
    );
}

#[test]
fn dtype_errors() {
    let plan = Plan::new(&xy_graph(), true).unwrap();
    let s = [4i64, 8];
    expect_err(
        plan.output(&[("x", TensorView::planning(DType::F16, &s))], "y"),
        ErrorClass::Dtype,
        "the graph wants f32",
    );
    let mut g = Graph::new().unwrap();
    let i = g.input("i", &[4], DType::I32).unwrap();
    expect_err(g.add("exp", &[i.into()]), ErrorClass::Dtype, "exp");
}

#[test]
fn graph_errors() {
    expect_err(Graph::from_json("{\"inputs\": ["), ErrorClass::Graph, "graph JSON");
    let mut g = xy_graph();
    expect_err(g.add("no_such_op", &[Arg::Node(Node(0))]), ErrorClass::Graph, "no_such_op");
    expect_err(
        g.add_with("softmax", &[Arg::Node(Node(0))], Some("[1]"), None),
        ErrorClass::Graph,
        "not a JSON object",
    );
    expect_err(g.input("x", &[1], DType::F32), ErrorClass::Graph, "'x'");
}

const BROKEN: &str = r#"{
  "templates": [{"name": "broken", "source": "template <class T> __global__ void broken(const T* x, T* y) { y[0] = x[0] +; }",
                 "params": [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"}],
                 "instance": "broken<{x}>", "grid": ["1"], "block": ["1"],
                 "output": {"param": "y", "like": "x"}}],
  "inputs": [{"name": "x", "shape": [4], "dtype": "f32"}],
  "nodes": [{"name": "y", "op": "broken", "args": ["x"]}],
  "outputs": ["y"]}"#;

#[test]
fn compile_errors_quote_the_source() {
    let g = Graph::from_json(BROKEN).unwrap();
    let mut e = Engine::offline("sm_90", Cache::Memory).unwrap();
    let err = expect_err(Plan::new(&g, true).unwrap().compile(&mut e), ErrorClass::Compile, "broken");
    assert!(err.to_string().starts_with("kiln (compile): kiln_plan_compile: "), "{}", err);
}

#[test]
fn cuda_errors_from_an_offline_engine() {
    let mut e = Engine::offline("sm_90", Cache::Memory).unwrap();
    expect_err(e.synchronize(), ErrorClass::Cuda, "offline");
    expect_err(e.alloc(1024), ErrorClass::Cuda, "offline");
    let plan = Plan::new(&xy_graph(), true).unwrap();
    let s = [4i64, 8];
    let v = TensorView::planning(DType::F32, &s);
    // A view without memory cannot run: an argument error, before the engine is asked.
    expect_err(plan.run(&mut e, &[("x", v)], &[("y", v)]), ErrorClass::Argument, "null data pointer");
    // SAFETY: an offline engine refuses the run before any memory is touched.
    let fake = unsafe { TensorView::from_raw(1 << 20, DType::F32, &s) };
    expect_err(plan.run(&mut e, &[("x", fake)], &[("y", fake)]), ErrorClass::Cuda, "offline");
    if !kiln::gpu_available() {
        expect_err(Engine::new(0, Cache::Memory), ErrorClass::Cuda, "kiln_engine_create");
    }
}

#[test]
fn cache_errors_name_the_directory() {
    let tmp = common::TempDir::new("cache");
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    expect_err(precompile(&xy_graph(), "sm_90", Cache::Dir(&file)), ErrorClass::Cache, "not-a-dir");
}

#[test]
fn every_status_code_has_its_class_and_name() {
    use kiln::sys;
    let classes = [
        (sys::KILN_ERROR_ARGUMENT, ErrorClass::Argument, "argument"),
        (sys::KILN_ERROR_SHAPE, ErrorClass::Shape, "shape"),
        (sys::KILN_ERROR_DTYPE, ErrorClass::Dtype, "dtype"),
        (sys::KILN_ERROR_GRAPH, ErrorClass::Graph, "graph"),
        (sys::KILN_ERROR_COMPILE, ErrorClass::Compile, "compile"),
        (sys::KILN_ERROR_CUDA, ErrorClass::Cuda, "cuda"),
        (sys::KILN_ERROR_CACHE, ErrorClass::Cache, "cache"),
        (sys::KILN_ERROR_OUT_OF_MEMORY, ErrorClass::OutOfMemory, "out of memory"),
        (sys::KILN_ERROR_INTERNAL, ErrorClass::Internal, "internal"),
    ];
    assert_eq!(ErrorClass::from_status(sys::KILN_OK), None);
    for (status, class, name) in classes {
        assert_eq!(ErrorClass::from_status(status), Some(class));
        assert_eq!(class.status(), status);
        assert_eq!(class.name(), name);
    }
    assert_eq!(ErrorClass::from_status(42), Some(ErrorClass::Internal));
    let e = Error::new(ErrorClass::OutOfMemory, "f: out of host memory");
    assert_eq!(e.to_string(), "kiln (out of memory): f: out of host memory");
    assert_eq!(kiln::version(), sys::KILN_ABI_VERSION);
}
