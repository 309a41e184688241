#!/usr/bin/env python3
"""Runs kiln's benchmark drivers beside PyTorch eager and torch.compile in one device run and
prints the BENCH.md table (last), writing the rows as JSON to $OUT/bench.json (or --json)."""
import argparse
import json
import os
import pathlib
import subprocess
import sys

# The benches that import this module take kiln from build-device/python or build/python where
# PYTHONPATH does not name one.
_REPO = pathlib.Path(__file__).resolve().parents[1]
for _build in ("build-device", "build"):
    if (_REPO / _build / "python" / "kiln").is_dir() and not os.environ.get("PYTHONPATH"):
        sys.path.insert(0, str(_REPO / _build / "python"))
        break

import torch  # noqa: E402
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}



def run_app(description, name, *extra):
    """A seed app's bench (bench/diffusion.py, gfn.py, ...): parses --bin, runs the app NAME with
    `extra` arguments and prints its output; returns its JSON lines (one per measured case) and
    its exit code."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--bin", default="build/bin")
    args = p.parse_args()
    run = subprocess.run([os.path.join(args.bin, name), *extra], capture_output=True, text=True)
    print(run.stdout, end="")
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")], run.returncode

def median_us(fn, reps=20, warmup=3, inner=1):
    """Median over `reps` events of `inner` back-to-back calls, per call (inner > 1 hides the
    host's per-call cost when it is longer than the kernel's)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / inner)
    times.sort()
    return times[len(times) // 2]


def workload_fn(r):
    """The PyTorch function of a kiln row and its tensors, on fresh random data."""
    dt = DTYPES[r["dtype"]]
    gen = torch.Generator(device="cuda").manual_seed(7)
    rows, cols = (int(v) for v in r["shape"].split("x")) if "shape" in r else (1, r["numel"])
    rnd = lambda *s: torch.empty(*s, device="cuda", dtype=dt).uniform_(-3, 3, generator=gen)
    x = rnd(rows, cols)
    w = lambda: rnd(cols)
    table = {
        "add": (lambda a, b: a + b, lambda: (x, rnd(rows, cols))),
        "mul": (lambda a, b: a * b, lambda: (x, rnd(rows, cols))),
        "silu": (lambda a: F.silu(a), lambda: (x,)),
        "where": (lambda c, a, b: torch.where(c, a, b),
                  lambda: (torch.rand(rows, cols, device="cuda", generator=gen) < 0.5, x, rnd(rows, cols))),
        "silu(a*b+c) op by op": (lambda a, b, c: F.silu(a * b + c), lambda: (x, rnd(rows, cols), rnd(rows, cols))),
        "silu(a*b+c) fused": (lambda a, b, c: F.silu(a * b + c), lambda: (x, rnd(rows, cols), rnd(rows, cols))),
        "softmax": (lambda a: torch.softmax(a, -1), lambda: (x,)),
        "layer_norm": (lambda a, g, b: F.layer_norm(a, (cols,), g, b, 1e-5), lambda: (x, w(), w())),
        "rms_norm": (lambda a, g: F.rms_norm(a, (cols,), g, 1e-5), lambda: (x, w())),
        "sum": (lambda a: a.sum(-1), lambda: (x,)),
        "sum (first axis)": (lambda a: a.sum(0), lambda: (x,)),
        "softmax(x*0.125+mask)": (lambda a, m: torch.softmax(a * 0.125 + m, -1), lambda: (x, w())),
        "cumsum": (lambda a: torch.cumsum(a, -1), lambda: (x,)),
    }
    f, make = table[r["workload"]]
    return f, make()


def peer(r, with_compile):
    f, args = workload_fn(r)
    eager_us = median_us(lambda: f(*args), inner=10)  # as kiln's drivers time kiln (bench/common.hpp)
    ref = f(*(a.double() if a.is_floating_point() else a for a in args))
    floor = 1.0 / ref.shape[-1] if "softmax" in r["workload"] else 1.0
    err = ((f(*args).double() - ref).abs() / ref.abs().clamp(min=floor)).max().item()
    ok = err <= (1e-4 if r["dtype"] == "f32" else 2e-2)
    compile_us = None
    if with_compile:
        # Timed both one call per event and amortized over 10, with the graphs Dynamo made.
        # A fresh Dynamo and dynamic=False for each workload: otherwise the second shape of an
        # op reuses a dynamic-shape graph ("0 graphs compiled" on 2026-11-22), not the
        # specialized kernel a user of that one shape gets.
        torch._dynamo.reset()
        before = dict(torch._dynamo.utils.counters["stats"])
        compiled = torch.compile(f, dynamic=False)
        single = median_us(lambda: compiled(*args))
        compile_us = median_us(lambda: compiled(*args), inner=10)
        graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"] - before.get("unique_graphs", 0)
        print(f"torch.compile {r['workload']} {r['dtype']} {r.get('shape', r.get('numel'))}: {single:.1f} us one call "
              f"per event, {compile_us:.1f} us amortized over 10; {graphs} graph(s) compiled", flush=True)
    return eager_us, ok, compile_us


def copy_ceiling_gbs():
    """Device-to-device copy of 1 GiB, bytes read + written per second (the benches' ceiling)."""
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    us = median_us(lambda: b.copy_(a), inner=5)
    return 2 * a.numel() / us / 1e3


def graphed(fn):
    """fn captured as a CUDA graph (after a warm-up on a side stream): its replay, and what the
    captured call returned."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def tune_print(engine, graph):
    """`kiln tune` of each kernel of `graph` on `engine` (its records then serve the graph's
    plans), a line each: candidates, the default's time and the winner's."""
    import kiln
    for t in kiln.tune(engine, graph):
        print(f"  tune {t['kernel']}: {t['candidates']} candidates, default "
              f"{t['default_us']:.1f} us, winner {t['winner']} {t['tuned_us']:.1f} us", flush=True)


def print_row(label, flops, kiln_us, peer, peer_us, err, ok, kernel):
    """One line of a bench against a peer: kiln's time and TFLOP/s (of `flops`), the peer's, the
    speed ratio, the check against the reference, and kiln's kernel."""
    print(f"{label}: kiln {kiln_us:7.1f} us {flops / kiln_us / 1e6:5.0f} TFLOP/s | {peer} "
          f"{peer_us:7.1f} us {flops / peer_us / 1e6:5.0f} TFLOP/s | kiln/{peer} speed "
          f"{peer_us / kiln_us:.2f}x | error {err:.1e} {'ok' if ok else 'FAIL'} | {kernel}",
          flush=True)


def run_rows(title, rows, row):
    """The GPU's name and `title`, then row(*r, tune) for each of `rows` (tune: --tune was
    given); the exit status, 0 when every row returned True."""
    print(f"{torch.cuda.get_device_name()}: {title}", flush=True)
    tune = "--tune" in sys.argv
    return 0 if all([row(*r, tune) for r in rows]) else 1


def torch_launch(n):
    """PyTorch's cost per op of n dependent tiny adds: eager, and replayed as a CUDA graph."""
    x = torch.full((1,), 0.5, device="cuda")

    def chain():
        t = x
        for _ in range(n):
            t = t + 1.0
        return t

    eager = median_us(chain) / n
    replayed, y = graphed(chain)
    replay = median_us(replayed) / n
    return eager, replay, y.item() == 1000.5


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="build/bin", help="folder of the kiln_bench_* drivers")
    p.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench.json"))
    p.add_argument("--only", default="", help="comma-separated drivers: elementwise,rows,launch")
    p.add_argument("--untuned-too", action="store_true",
                   help="also time the row drivers with KILN_DISABLE_TUNING=1 (default parameters) beside the tuned")
    args = p.parse_args()

    untuned = {}
    if args.untuned_too:
        env = dict(os.environ, KILN_DISABLE_TUNING="1")
        out = subprocess.run([os.path.join(args.bin, "kiln_bench_rows")], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            sys.exit(f"kiln_bench_rows (untuned) failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        for line in out.stdout.splitlines():
            if line.startswith('{"workload"'):
                r = json.loads(line)
                untuned[(r["workload"], r["dtype"], r["shape"])] = r["kiln_us"]

    rows, jits, launch = [], {}, None
    for driver in (args.only.split(",") if args.only else ["elementwise", "rows", "launch"]):
        out = subprocess.run([os.path.join(args.bin, f"kiln_bench_{driver}")], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"kiln_bench_{driver} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        for line in out.stdout.splitlines():
            if line.startswith("{"):
                obj = json.loads(line)
                if "jit" in obj:
                    jits[driver] = obj["jit"]
                elif "launch" in obj:
                    launch = obj["launch"]
                else:
                    rows.append(obj)
                    # As it comes: a run cut off before the peers still leaves kiln's numbers.
                    print(f"kiln {obj['workload']} {obj['dtype']} {obj.get('shape', obj.get('numel'))}: "
                          f"{obj['kiln_us']:.2f} us, check {obj.get('check', '-')}", flush=True)
    if launch:
        eager, replay, ok = torch_launch(launch["kernels"])
        launch.update({"torch_eager_us_per_op": eager, "torch_graph_us_per_op": replay, "torch_check": "ok" if ok else "FAIL"})
    if not rows:
        print(json.dumps({"launch": launch}))
        return 0
    copy = next(r for r in rows if r["workload"] == "copy")
    ceiling = copy["bytes"] / copy["kiln_us"] / 1e3  # GB/s

    table = []
    for r in rows:
        if r["workload"] == "copy":
            continue
        gbps = r["bytes"] / r["kiln_us"] / 1e3
        with_compile = r["workload"] not in ("add", "mul", "silu", "where") and "op by op" not in r["workload"]
        eager_us, eager_ok, compile_us = peer(r, with_compile)
        table.append({
            "workload": r["workload"], "dtype": r["dtype"], "shape": r.get("shape", str(r["numel"])),
            "kiln_us": r["kiln_us"], "gbps": gbps, "pct_ceiling": 100 * gbps / ceiling,
            "eager_us": eager_us, "x_eager": eager_us / r["kiln_us"],
            "compile_us": compile_us, "x_compile": compile_us / r["kiln_us"] if compile_us else None,
            "check": "ok" if r["check"] == "ok" else "FAIL", "max_err": r.get("max_err"),
            "peer_check": "ok" if eager_ok else "FAIL",
            "untuned_us": untuned.get((r["workload"], r["dtype"], r.get("shape"))),
        })

    result = {"device": torch.cuda.get_device_name(), "copy_ceiling_gbps": ceiling, "rows": table, "jit": jits,
              "launch": launch}
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"device: {result['device']}; copy ceiling (1 GiB D2D, read+write): {ceiling:.0f} GB/s")
    for driver, jit in jits.items():
        print(f"JIT ({driver}): {jit['compiles']} compiles, {jit['compile_ms']:.1f} ms total, {jit['disk_hits']} disk hits, "
              f"{jit['memory_hits']} memory hits")
    if launch:
        print(f"{launch['kernels']} dependent tiny adds, us per kernel (GPU / host): kiln op by op "
              f"{launch['eager_us_per_kernel']:.2f} / {launch['eager_host_us_per_kernel']:.2f}, "
              f"kiln run {launch['run_us_per_kernel']:.2f} / {launch['run_host_us_per_kernel']:.2f}, "
              f"kiln replay (CUDA graph) {launch['replay_us_per_kernel']:.2f} / {launch['replay_host_us_per_kernel']:.2f}; "
              f"PyTorch eager {launch['torch_eager_us_per_op']:.2f}, PyTorch CUDA graph {launch['torch_graph_us_per_op']:.2f} "
              f"(check: kiln {launch['check']}, PyTorch {launch['torch_check']})")
        r20 = launch["replay20"]
        print(f"a plan of {r20['kernels']} small kernels replayed with new buffers each call ({r20['buffer_sets']} sets): "
              f"host {r20['host_us_per_replay']:.2f} us, GPU {r20['gpu_us_per_replay']:.2f} us per replay "
              f"(check: {r20['check']})")
    print(f"{'workload':<24} {'dtype':<5} {'shape':<11} {'kiln_us':>9} {'GB/s':>7} {'%ceiling':>8} "
          f"{'x_eager':>7} {'x_compile':>9}  check" + (f"  {'untuned_us':>10} {'x_untuned':>9}" if untuned else ""))
    for t in table:
        ok = t["check"] == "ok"
        gb = f"{t['gbps']:.0f}" if ok else "FAIL"
        xc = format(t["x_compile"], ".2f") if t["x_compile"] else "-"
        line = (f"{t['workload']:<24} {t['dtype']:<5} {t['shape']:<11} {t['kiln_us']:>9.1f} {gb:>7} "
                f"{t['pct_ceiling']:>7.1f}% {t['x_eager']:>7.2f} {xc:>9}  {t['check']}{'' if t['peer_check'] == 'ok' else ' (peer FAIL)'}")
        if t["untuned_us"]:
            line += f"  {t['untuned_us']:>10.1f} {t['untuned_us'] / t['kiln_us']:>9.2f}"
        print(line)
    if untuned:
        print("kiln_us: with this GPU's tuning records; untuned_us: the same driver with KILN_DISABLE_TUNING=1, run first")
    return 0 if all(t["check"] == "ok" for t in table) and (not launch or launch["check"] == launch["replay20"]["check"] == "ok") else 1


if __name__ == "__main__":
    sys.exit(main())
