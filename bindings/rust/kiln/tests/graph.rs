// Graphs built node by node and from JSON, their plans' outputs (dynamic dims bound), and a
// user's template declared as an op and precompiled offline with tunables.
use kiln::{Arg, Cache, DType, Engine, Graph, Node, Operand, Plan, Template, TensorView};

#[test]
fn a_graph_built_node_by_node_round_trips_through_json() {
    let mut g = Graph::new().unwrap();
    let x = g.input("x", &[16, 64], DType::F32).unwrap();
    let b = g.input("b", &[64], DType::F32).unwrap();
    assert_eq!((x, b), (Node(0), Node(1)));
    let s = g.add("mul", &[x.into(), Arg::Scalar(2.0)]).unwrap();
    let t = g.add("add", &[s.into(), b.into()]).unwrap();
    let y = g.add_with("softmax", &[t.into()], Some(r#"{"axis": 1}"#), Some("y")).unwrap();
    assert_eq!((s, t, y), (Node(2), Node(3), Node(4)));
    g.output(y, None).unwrap();
    let json = g.to_json().unwrap();
    for needle in ["\"softmax\"", "\"y\"", "\"b\"", "2.0"] {
        assert!(json.contains(needle), "{} not in {}", needle, json);
    }
    let again = Graph::from_json(&json).unwrap();
    assert_eq!(again.to_json().unwrap(), json);
    let plan = Plan::new(&again, true).unwrap();
    let (xs, bs) = ([16i64, 64], [64i64]);
    let inputs = [("x", TensorView::planning(DType::F32, &xs)), ("b", TensorView::planning(DType::F32, &bs))];
    assert_eq!(plan.output(&inputs, "y").unwrap(), (DType::F32, vec![16, 64]));
    let mut e = Engine::offline("sm_80", Cache::Memory).unwrap();
    assert_eq!(e.arch(), "sm_80");
    assert_eq!(plan.compile(&mut e).unwrap(), 1, "mul, add and softmax fuse into one kernel");
    assert_eq!(Plan::new(&again, false).unwrap().compile(&mut e).unwrap(), 3);
    assert_eq!(e.cache_stats().compiles, 4);
}

#[test]
fn a_dynamic_dim_is_bound_by_the_inputs() {
    let mut g = Graph::new().unwrap();
    let x = g.input("x", &[-1, 33], DType::BF16).unwrap();
    let y = g.add_with("sum", &[x.into()], Some(r#"{"axis": 1, "keepdim": true}"#), Some("y")).unwrap();
    g.output(y, Some("total")).unwrap();
    let plan = Plan::new(&g, true).unwrap();
    for rows in [1i64, 7, 4097] {
        let shape = [rows, 33];
        let got = plan.output(&[("x", TensorView::planning(DType::BF16, &shape))], "total").unwrap();
        assert_eq!(got, (DType::BF16, vec![rows, 1]));
    }
}

const SCALE: &str = r#"{"name": "scale", "source": "template <class T, int B> __global__ void scale(const T* x, T* y, long long n, float a) { long long i = (long long)blockIdx.x * B + threadIdx.x; if (i < n) y[i] = T(float(x[i]) * a); }",
  "params": [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"},
             {"name": "n", "kind": "i64"}, {"name": "a", "kind": "f32"}],
  "instance": "scale<{x}, {B}>",
  "tunables": [{"name": "B", "candidates": [256, 128, 512]}],
  "grid": ["ceilf(n / B)"], "block": ["B"],
  "output": {"param": "y", "like": "x"}}"#;

#[test]
fn a_template_precompiles_with_tunables_and_serves_as_an_op() {
    let t = Template::from_json(SCALE).unwrap();
    let mut e = Engine::offline("sm_90", Cache::Memory).unwrap();
    let n = [1000i64];
    let args = [
        Operand::Tensor(TensorView::planning(DType::F32, &n)),
        Operand::Tensor(TensorView::planning(DType::F32, &n)),
        Operand::Scalar(1000.0),
        Operand::Scalar(3.0),
    ];
    t.precompile(&mut e, &args, None).unwrap();
    t.precompile(&mut e, &args, Some(r#"{"B": 128}"#)).unwrap();
    t.precompile(&mut e, &args, Some(r#"{"B": 256}"#)).unwrap();
    assert_eq!(e.cache_stats().compiles, 2, "256 is the default's kernel");
    let err = t.launch(&mut e, &args, None).unwrap_err();
    assert_eq!(err.class(), kiln::ErrorClass::Cuda, "{}", err);

    let mut g = Graph::new().unwrap();
    g.define_template(Some("triple"), &t).unwrap();
    let x = g.input("x", &[1000], DType::F32).unwrap();
    let y =
        g.add_with("triple", &[x.into(), Arg::Scalar(1000.0), Arg::Scalar(3.0)], None, Some("y")).unwrap();
    g.output(y, None).unwrap();
    assert_eq!(Plan::new(&g, true).unwrap().compile(&mut e).unwrap(), 1);
}

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn handles_are_send_and_the_thread_safe_ones_sync() {
    assert_send::<Engine>();
    assert_send_sync::<Graph>();
    assert_send_sync::<Plan>();
    assert_send_sync::<Template>();
    assert_send_sync::<kiln::Buffer>();
    assert_send_sync::<kiln::Error>();
    // One plan compiled from two threads at once, each on its own engine.
    let mut g = Graph::new().unwrap();
    let x = g.input("x", &[5, 300], DType::F16).unwrap();
    let y = g.add_with("layer_norm", &[x.into()], None, Some("y")).unwrap();
    g.output(y, None).unwrap();
    let plan = Plan::new(&g, true).unwrap();
    std::thread::scope(|s| {
        for arch in ["sm_80", "sm_90"] {
            let plan = &plan;
            s.spawn(move || {
                let mut e = Engine::offline(arch, Cache::Memory).unwrap();
                assert_eq!(plan.compile(&mut e).unwrap(), 1);
            });
        }
    });
}
