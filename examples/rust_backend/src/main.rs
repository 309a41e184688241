//! rust_backend: seed 003's backend on kiln from Rust. On a GPU: every op of the set in f32, f16
//! and bf16, and the fused MLP forward, through the Backend trait on kiln and on the CPU, checked
//! against each other; then the host time per call of each plan from Rust beside the same graph's
//! plan from C++ (--cpp-timer), and the difference: what the C and Rust layers add. Without a
//! GPU it compiles every plan for --arch instead.
//!
//! Usage: rust_backend [--cpp-timer PATH] [--reps N] [--arch sm_90]
mod backend;
mod cpu;
mod kiln_backend;
mod ops;
mod timing;

use backend::{apply, Backend};
use cpu::{round_to, CpuBackend};
use kiln::{Cache, DType, Engine, Plan, Result};
use kiln_backend::KilnBackend;
use ops::Op;

const ROWS: usize = 7; // odd, and 1000 a multiple of no tile
const COLS: usize = 1000;
const MLP: [usize; 4] = [64, 256, 512, 128]; // batch, k, hidden, n

// A small deterministic generator (no crates): xorshift64*, uniform in [lo, hi).
struct Rng(u64);
impl Rng {
    fn uniform(&mut self, n: usize, lo: f32, hi: f32, t: DType) -> Vec<f32> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 >> 12;
                self.0 ^= self.0 << 25;
                self.0 ^= self.0 >> 27;
                let u = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32;
                round_to(t, lo + (hi - lo) * u)
            })
            .collect()
    }
}

fn tolerance(t: DType) -> f64 {
    match t {
        DType::F32 => 1e-5,
        DType::F16 => 1e-3,
        _ => 8e-3,
    }
}

// The worst of |got - want| / max(|want|, floor).
fn worst_error(got: &[f32], want: &[f32], floor: f64) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter().zip(want).fold(0.0, |w, (&g, &r)| {
        let e = (g as f64 - r as f64).abs() / (r as f64).abs().max(floor);
        if e.is_nan() {
            f64::INFINITY
        } else {
            w.max(e)
        }
    })
}

// The inputs of `op`, in Op::inputs order: x in [-2, 2] ([0.5, 2] for log and powf), the other
// operand in [0.5, 2] (a divisor), grad in [-2, 2], weight in [0.5, 2], bias in [-1, 1].
fn inputs_of(op: Op, t: DType, rng: &mut Rng) -> Vec<(Vec<f32>, usize, usize)> {
    op.inputs()
        .iter()
        .map(|&name| match name {
            "x" if matches!(op, Op::Log | Op::Powf) => (rng.uniform(ROWS * COLS, 0.5, 2.0, t), ROWS, COLS),
            "x" | "grad" => (rng.uniform(ROWS * COLS, -2.0, 2.0, t), ROWS, COLS),
            "y" => (rng.uniform(ROWS * COLS, 0.5, 2.0, t), ROWS, COLS),
            "w" => (rng.uniform(COLS, 0.5, 2.0, t), 1, COLS),
            _ => (rng.uniform(COLS, -1.0, 1.0, t), 1, COLS),
        })
        .collect()
}

fn check_ops(t: DType, rng: &mut Rng) -> Result<bool> {
    let gpu = KilnBackend::new(t)?;
    let cpu = CpuBackend { dtype: t };
    let mut ok = true;
    for &op in &ops::ALL {
        let host = inputs_of(op, t, rng);
        let dev: Vec<_> = host.iter().map(|(v, r, c)| gpu.from_vec(v, *r, *c)).collect::<Result<_>>()?;
        let ref_in: Vec<_> = host.iter().map(|(v, r, c)| cpu.from_vec(v, *r, *c)).collect::<Result<_>>()?;
        let scalar = if op == Op::Fill { 0.5 } else { 1.5 };
        let got = gpu.to_vec(&apply(&gpu, op, &dev.iter().collect::<Vec<_>>(), scalar)?)?;
        let want = cpu.to_vec(&apply(&cpu, op, &ref_in.iter().collect::<Vec<_>>(), scalar)?)?;
        // A sum's error grows with the sum of magnitudes.
        let floor = if op == Op::Sum { host[0].0.iter().map(|v| v.abs() as f64).sum() } else { 1.0 };
        let err = worst_error(&got, &want, floor);
        let pass = err <= tolerance(t);
        ok &= pass;
        println!(
            "check {:<14} {:<4} [{}, {}]  worst error {:.2e}  {}",
            op.name(),
            t.name(),
            ROWS,
            COLS,
            err,
            if pass { "ok" } else { "FAIL" }
        );
    }
    let [b, k, h, n] = MLP;
    let s = 1.0 / (k as f32).sqrt();
    let (x, w1, b1, w2) = (
        rng.uniform(b * k, -2.0, 2.0, t),
        rng.uniform(h * k, -s, s, t),
        rng.uniform(h, -1.0, 1.0, t),
        rng.uniform(n * h, -s, s, t),
    );
    let got = gpu.mlp_forward(
        &gpu.from_vec(&x, b, k)?,
        &gpu.from_vec(&w1, h, k)?,
        &gpu.from_vec(&b1, 1, h)?,
        &gpu.from_vec(&w2, n, h)?,
    )?;
    let want = cpu.mlp_forward(
        &cpu.from_vec(&x, b, k)?,
        &cpu.from_vec(&w1, h, k)?,
        &cpu.from_vec(&b1, 1, h)?,
        &cpu.from_vec(&w2, n, h)?,
    )?;
    let kernels = gpu.mlp_entry(b as i64, k as i64, h as i64, n as i64)?.plan.compile(&mut gpu.engine())?;
    let err = worst_error(&gpu.to_vec(&got)?, &want.data, 1.0);
    let tol = match t {
        DType::F32 => 1e-4,
        DType::F16 => 4e-3,
        _ => 3e-2,
    };
    ok &= err <= tol;
    println!(
        "check {:<14} {:<4} {:?}  worst error {:.2e}  {} ({} kernels, {} plans made)",
        "mlp_forward",
        t.name(),
        MLP,
        err,
        if err <= tol { "ok" } else { "FAIL" },
        kernels,
        gpu.plan_count()
    );
    Ok(ok)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let reps: usize = opt("--reps").and_then(|r| r.parse().ok()).unwrap_or(200);
    let code = match run(opt("--cpp-timer"), reps, opt("--arch").unwrap_or_else(|| "sm_90".into())) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("rust_backend: {}", e);
            2
        }
    };
    std::process::exit(code);
}

fn run(timer: Option<String>, reps: usize, arch: String) -> Result<bool> {
    println!("kiln ABI {}; GPU: {}", kiln::version(), kiln::gpu_available());
    if !kiln::gpu_available() {
        let mut e = Engine::offline(&arch, Cache::Default)?;
        let mut kernels = 0;
        for &t in &DType::FLOATS {
            for &op in &ops::ALL {
                kernels +=
                    Plan::new(&ops::graph(op, t, ROWS as i64, COLS as i64, 1.5)?, true)?.compile(&mut e)?;
            }
            let [b, k, h, n] = MLP;
            kernels += Plan::new(&ops::mlp_graph(t, b as i64, k as i64, h as i64, n as i64)?, true)?
                .compile(&mut e)?;
        }
        println!("no GPU: compiled {} kernels for {} ({:?})", kernels, arch, e.cache_stats());
        return Ok(true);
    }
    let mut rng = Rng(0x5eed_0003);
    let mut ok = true;
    for &t in &DType::FLOATS {
        let t0 = std::time::Instant::now();
        ok &= check_ops(t, &mut rng)?;
        println!(
            "{} checked in {:.1} s (its plans compiled or read from the cache)",
            t.name(),
            t0.elapsed().as_secs_f64()
        );
    }
    let t0 = std::time::Instant::now();
    ok &= compare_times(timer, reps, &mut rng)?;
    println!("timed in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(ok)
}

// Times every op (f32, [16, 1024]) and the MLP from Rust, then the same graphs from C++.
fn compare_times(timer: Option<String>, reps: usize, rng: &mut Rng) -> Result<bool> {
    let t = DType::F32;
    let gpu = KilnBackend::new(t)?;
    let dir = std::env::temp_dir().join(format!("rust_backend_graphs_{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| kiln::Error::new(kiln::ErrorClass::Argument, e.to_string()))?;
    let (rows, cols) = (16usize, 1024usize);
    let mut rust = Vec::new();
    let mut files = Vec::new();
    let mut cases: Vec<(String, std::rc::Rc<kiln_backend::Entry>, Vec<kiln_backend::KilnTensor>)> =
        Vec::new();
    for &op in &ops::ALL {
        let ins = op
            .inputs()
            .iter()
            .map(|&n| {
                if n == "w" || n == "b" {
                    gpu.from_vec(&rng.uniform(cols, 0.5, 2.0, t), 1, cols)
                } else {
                    gpu.from_vec(&rng.uniform(rows * cols, 0.5, 2.0, t), rows, cols)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let entry = gpu.op_entry(op, &[rows as i64, cols as i64], 1.5)?;
        cases.push((op.name().to_string(), entry, ins));
    }
    let [b, k, h, n] = MLP;
    let mlp_in = vec![
        gpu.from_vec(&rng.uniform(b * k, -1.0, 1.0, t), b, k)?,
        gpu.from_vec(&rng.uniform(h * k, -0.1, 0.1, t), h, k)?,
        gpu.from_vec(&rng.uniform(h, -1.0, 1.0, t), 1, h)?,
        gpu.from_vec(&rng.uniform(n * h, -0.1, 0.1, t), n, h)?,
    ];
    cases.push(("mlp_forward".into(), gpu.mlp_entry(b as i64, k as i64, h as i64, n as i64)?, mlp_in));
    for (name, entry, ins) in &cases {
        let bytes = entry.out_shape.iter().product::<i64>() as usize * entry.out_dtype.size();
        let out = kiln_backend::KilnTensor {
            buf: gpu.engine().alloc(bytes)?,
            dtype: entry.out_dtype,
            shape: entry.out_shape.clone(),
        };
        let (run, replay) = timing::rust_times(&gpu, entry, &ins.iter().collect::<Vec<_>>(), &out, reps)?;
        rust.push((name.clone(), run, replay));
        let graph_json = graph_json_of(name, t, rows, cols)?;
        let file = dir.join(format!("{}.json", name));
        std::fs::write(&file, graph_json)
            .map_err(|e| kiln::Error::new(kiln::ErrorClass::Argument, e.to_string()))?;
        files.push(file);
    }
    let cpp = match &timer {
        Some(path) => timing::cpp_times(std::path::Path::new(path), reps, &files).unwrap_or_else(|e| {
            eprintln!("rust_backend: {}", e);
            Vec::new()
        }),
        None => Vec::new(),
    };
    std::fs::remove_dir_all(&dir).ok();
    print_times(&rust, &cpp)
}

fn graph_json_of(name: &str, t: DType, rows: usize, cols: usize) -> Result<String> {
    if name == "mlp_forward" {
        let [b, k, h, n] = MLP;
        return ops::mlp_graph(t, b as i64, k as i64, h as i64, n as i64)?.to_json();
    }
    let op = *ops::ALL.iter().find(|o| o.name() == name).unwrap();
    ops::graph(op, t, rows as i64, cols as i64, 1.5)?.to_json()
}

// The table, and whether the C and Rust layers add at most 2 µs per call (the median over ops).
fn print_times(rust: &[(String, f64, f64)], cpp: &[(String, f64, f64)]) -> Result<bool> {
    println!("\nhost time per call, f32 [16, 1024] (MLP {:?}), median of single calls (us):", MLP);
    println!(
        "{:<14} {:>9} {:>9} {:>9} | {:>10} {:>10} {:>9}",
        "op", "rust run", "c++ run", "added", "rust repl", "c++ repl", "added"
    );
    let mut added = Vec::new();
    for (name, run, replay) in rust {
        match cpp.iter().find(|c| &c.0 == name) {
            Some((_, crun, crep)) => {
                println!(
                    "{:<14} {:>9.2} {:>9.2} {:>9.2} | {:>10.2} {:>10.2} {:>9.2}",
                    name,
                    run,
                    crun,
                    run - crun,
                    replay,
                    crep,
                    replay - crep
                );
                added.push(run - crun);
                added.push(replay - crep);
            }
            None => println!(
                "{:<14} {:>9.2} {:>9} {:>9} | {:>10.2} {:>10} {:>9}",
                name, run, "-", "-", replay, "-", "-"
            ),
        }
    }
    if added.is_empty() {
        println!("no C++ timings (pass --cpp-timer build/bin/rust_backend_cpp_timing)");
        return Ok(true);
    }
    added.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = added[added.len() / 2];
    let within = median <= 2.0;
    println!(
        "C + Rust layers add {:.2} us per call (median over {} op calls; max {:.2}): {}",
        median,
        added.len(),
        added[added.len() - 1],
        if within { "within 2 us" } else { "OVER 2 us" }
    );
    Ok(within)
}
