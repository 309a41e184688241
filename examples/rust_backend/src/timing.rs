//! Per-call host time of a plan called from Rust (through the C API), beside the same graph's
//! plan called from C++ (cpp/plan_timing.cpp, run as a child process on the same GPU).
use crate::kiln_backend::{Entry, KilnBackend, KilnTensor};
use kiln::{Result, TensorView};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Median microseconds the host spends in one call of `f`, each call after the GPU finished the
/// last (so that a full queue never blocks the host): what C++'s timer measures too.
pub fn host_us(
    backend: &KilnBackend,
    reps: usize,
    mut f: impl FnMut(&mut kiln::Engine) -> Result<()>,
) -> Result<f64> {
    let mut engine = backend.engine();
    for _ in 0..5 {
        f(&mut engine)?;
    }
    let mut us = Vec::with_capacity(reps);
    for _ in 0..reps {
        engine.synchronize()?;
        let t0 = Instant::now();
        f(&mut engine)?;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    engine.synchronize()?;
    us.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(us[reps / 2])
}

/// Rust's run and replay times of `entry` on `inputs` into `out`.
pub fn rust_times(
    backend: &KilnBackend,
    entry: &Entry,
    inputs: &[&KilnTensor],
    out: &KilnTensor,
    reps: usize,
) -> Result<(f64, f64)> {
    let ins: Vec<TensorView<'_>> = inputs.iter().map(|t| t.view()).collect();
    let outs = [out.view()];
    let run = host_us(backend, reps, |e| entry.call.run(e, &ins, &outs))?;
    let replay = host_us(backend, reps, |e| entry.call.replay(e, &ins, &outs))?;
    Ok((run, replay))
}

/// C++'s run and replay times of each graph file, by its stem: the timer's output lines
/// "<stem> <run_us> <replay_us>".
pub fn cpp_times(
    timer: &Path,
    reps: usize,
    graphs: &[std::path::PathBuf],
) -> std::result::Result<Vec<(String, f64, f64)>, String> {
    let out = Command::new(timer)
        .arg(reps.to_string())
        .args(graphs)
        .output()
        .map_err(|e| format!("cannot run {}: {}", timer.display(), e))?;
    if !out.status.success() {
        return Err(format!("{} failed: {}", timer.display(), String::from_utf8_lossy(&out.stderr)));
    }
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 3 {
            if let (Ok(a), Ok(b)) = (f[1].parse(), f[2].parse()) {
                rows.push((f[0].to_string(), a, b));
            }
        }
    }
    Ok(rows)
}
