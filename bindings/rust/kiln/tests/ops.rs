// Seed 003's op set (examples/rust_backend/src/ops.rs: the graphs the example runs) compiled
// offline for sm_90 into a temporary cache, each dtype on an engine of its own thread; a second
// set of engines then finds every kernel on disk.
mod common;
#[allow(dead_code)]
#[path = "../../../../examples/rust_backend/src/ops.rs"]
mod ops;

use kiln::{precompile, Cache, DType, Engine, Plan};

// Odd extents, not multiples of any tile: 3 rows of 1000.
const ROWS: i64 = 3;
const COLS: i64 = 1000;

fn plans(dtype: DType) -> Vec<(ops::Op, Plan)> {
    ops::ALL
        .iter()
        .map(|&op| {
            let g = ops::graph(op, dtype, ROWS, COLS, 1.5).unwrap_or_else(|e| panic!("{}: {}", op.name(), e));
            (op, Plan::new(&g, true).unwrap())
        })
        .collect()
}

// Compiles every op of `dtype` on a new engine over `dir`; (kernels, the engine's counters).
fn compile_all(dtype: DType, dir: &std::path::Path) -> (usize, kiln::CacheStats) {
    let mut e = Engine::offline("sm_90", Cache::Dir(dir)).unwrap();
    let mut kernels = 0;
    for (op, plan) in plans(dtype) {
        let n = plan.compile(&mut e).unwrap_or_else(|err| panic!("{} {}: {}", op.name(), dtype.name(), err));
        assert!(n >= 1, "{} {} compiled no kernel", op.name(), dtype.name());
        kernels += n;
    }
    (kernels, e.cache_stats())
}

#[test]
fn seed_003_op_set_compiles_offline_for_sm_90_in_f32_f16_bf16() {
    let tmp = common::TempDir::new("ops");
    let dir = tmp.path();
    let first: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = DType::FLOATS.iter().map(|&t| s.spawn(move || compile_all(t, dir))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, (kernels, stats)) in DType::FLOATS.iter().zip(&first) {
        assert!(*kernels >= ops::ALL.len(), "{}: {} kernels", t.name(), kernels);
        assert!(stats.compiles >= 1, "{}: {:?}", t.name(), stats);
        assert_eq!(stats.compiles + stats.memory_hits, *kernels as u64, "{}: {:?}", t.name(), stats);
        eprintln!(
            "{}: {} kernels, {} compiled ({:.0} ms of NVRTC)",
            t.name(),
            kernels,
            stats.compiles,
            stats.compile_ms
        );
    }
    // A fresh engine on the same directory compiles nothing.
    for &t in &DType::FLOATS {
        let (kernels, stats) = compile_all(t, dir);
        assert_eq!(stats.compiles, 0, "{}: {:?}", t.name(), stats);
        assert_eq!(stats.disk_hits + stats.memory_hits, kernels as u64, "{}: {:?}", t.name(), stats);
    }
    // The example's fused MLP: linear + bias + gelu + linear.
    let mlp = ops::mlp_graph(DType::BF16, 8, 64, 96, 40).unwrap();
    let stats = precompile(&mlp, "sm_90", Cache::Dir(dir)).unwrap();
    assert!(stats.compiles >= 1, "{:?}", stats);
    let kernels = Plan::new(&mlp, true)
        .unwrap()
        .compile(&mut Engine::offline("sm_90", Cache::Dir(dir)).unwrap())
        .unwrap();
    assert!(kernels <= 2, "the MLP fuses into at most two kernels, got {}", kernels);
}
