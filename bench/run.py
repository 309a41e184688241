#!/usr/bin/env python3
"""Runs kiln's elementwise benchmark beside PyTorch eager in one device run and prints the
BENCH.md table (last), writing the rows as JSON to $OUT/bench_elementwise.json (or --json)."""
import argparse
import json
import os
import subprocess
import sys

import torch

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def median_us(fn, reps=30, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    times.sort()
    return times[len(times) // 2]


def torch_row(workload, dtype, n):
    """Times PyTorch eager on fresh random data; checks it against fp64 on the same data."""
    dt = DTYPES[dtype]
    gen = torch.Generator(device="cuda").manual_seed(7)
    a, b, c = (torch.empty(n, device="cuda", dtype=dt).uniform_(-4, 4, generator=gen) for _ in range(3))
    cond = torch.rand(n, device="cuda", generator=gen) < 0.5
    f = {
        "add": lambda: a + b,
        "mul": lambda: a * b,
        "silu": lambda: torch.nn.functional.silu(a),
        "where": lambda: torch.where(cond, a, b),
        "silu(a*b+c) op by op": lambda: torch.nn.functional.silu(a * b + c),
        "silu(a*b+c) fused": lambda: torch.nn.functional.silu(a * b + c),
    }[workload]
    us = median_us(f)
    compiled_us = None
    if workload.endswith("fused"):
        g = torch.compile(lambda: torch.nn.functional.silu(a * b + c))
        compiled_us = median_us(g)
    ref = {
        "add": lambda: a.double() + b.double(),
        "mul": lambda: a.double() * b.double(),
        "silu": lambda: torch.nn.functional.silu(a.double()),
        "where": lambda: torch.where(cond, a.double(), b.double()),
        "silu(a*b+c) op by op": lambda: torch.nn.functional.silu((a * b + c).double()),
        "silu(a*b+c) fused": lambda: torch.nn.functional.silu((a * b + c).double()),
    }[workload]()
    err = ((f().double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
    ok = err <= (1e-5 if dtype == "f32" else 1e-2)
    return us, ok, compiled_us


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kiln-bench", default="build/bin/kiln_bench_elementwise")
    p.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench_elementwise.json"))
    args = p.parse_args()

    out = subprocess.run([args.kiln_bench], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kiln benchmark failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    jit = next(l["jit"] for l in lines if "jit" in l)
    rows = [l for l in lines if "workload" in l]
    copy = next(r for r in rows if r["workload"] == "copy")
    ceiling = copy["bytes"] / copy["kiln_us"] / 1e3  # GB/s

    table = []
    for r in rows:
        if r["workload"] == "copy":
            continue
        gbps = r["bytes"] / r["kiln_us"] / 1e3
        eager_us, eager_ok, compile_us = torch_row(r["workload"], r["dtype"], r["numel"])
        check = "ok" if r["check"] == "ok" and eager_ok else "FAIL"
        table.append({
            "workload": r["workload"], "dtype": r["dtype"], "shape": str(r["numel"]),
            "kiln_us": r["kiln_us"], "gbps": gbps, "pct_ceiling": 100 * gbps / ceiling,
            "eager_us": eager_us, "x_eager": eager_us / r["kiln_us"],
            "x_compile": compile_us / r["kiln_us"] if compile_us else None,
            "check": check if r["check"] == "ok" else "FAIL", "eager_check": "ok" if eager_ok else "FAIL",
        })

    result = {"device": torch.cuda.get_device_name(), "copy_ceiling_gbps": ceiling, "rows": table, "jit": jit}
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)

    print(f"device: {result['device']}; copy ceiling (1 GiB D2D, read+write): {ceiling:.0f} GB/s")
    print(f"JIT: {jit['compiles']} compiles, {jit['compile_ms']:.1f} ms total, {jit['disk_hits']} disk hits, "
          f"{jit['memory_hits']} memory hits")
    print(f"{'workload':<24} {'dtype':<5} {'shape':<10} {'kiln_us':>9} {'GB/s':>7} {'%ceiling':>8} "
          f"{'eager_us':>9} {'x_eager':>7} {'x_compile':>9}  check")
    for t in table:
        gb = "FAIL" if t["check"] != "ok" else f"{t['gbps']:.0f}"
        print(f"{t['workload']:<24} {t['dtype']:<5} {t['shape']:<10} {t['kiln_us']:>9.1f} {gb:>7} "
              f"{t['pct_ceiling']:>7.1f}% {t['eager_us']:>9.1f} {t['x_eager']:>7.2f} "
              f"{(format(t['x_compile'], '.2f') if t['x_compile'] else '-'):>9}  {t['check']}")
    return 0 if all(t["check"] == "ok" for t in table) else 1


if __name__ == "__main__":
    sys.exit(main())
