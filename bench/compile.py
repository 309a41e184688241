#!/usr/bin/env python3
"""Cold compile times of kiln's kernels against NVRTC's floor, in one run on one machine.

Each kernel of the benchmark grid (the elementwise ops and every row workload of
kiln_bench_rows) is compiled as the first compile of a fresh `kiln plan --compile` process with
an empty cache, and its time read from the line kiln prints ("compiled NAME for ARCH: compiled
(N ms, ...)"). The baseline is the first NVRTC compile of a tiny kernel in a fresh process
(kiln_bench_compile_baseline). Rounds alternate baseline and kernels, so a busy machine slows
both alike; each figure is the median over the rounds.

usage: bench/compile.py [--bin build/bin] [--baseline-bin DIR] [--arch sm_90a] [--rounds 3] [--cpu N] [--json FILE]
(--baseline-bin: where kiln_bench_compile_baseline is, when --bin is an older build without it;
--cpu: every process on that core alone, so that the baseline and the kernels share it: the cores
of a small cloud machine can differ by 40 % for minutes at a time, bench/NOTES.md session 28)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

# (name, dtype, graph body) of the elementwise kernels: 1-D, 2^24 elements, as the bench runs them.
ELEMENTWISE = [
    ("add", [("a", None), ("b", None)], [{"name": "y", "op": "add", "args": ["a", "b"]}]),
    ("mul", [("a", None), ("b", None)], [{"name": "y", "op": "mul", "args": ["a", "b"]}]),
    ("silu", [("a", None)], [{"name": "y", "op": "silu", "args": ["a"]}]),
    ("where", [("k", "bool"), ("a", None), ("b", None)], [{"name": "y", "op": "where", "args": ["k", "a", "b"]}]),
    ("silu(a*b+c)", [("a", None), ("b", None), ("c", None)],
     [{"name": "t", "op": "mul", "args": ["a", "b"]}, {"name": "u", "op": "add", "args": ["t", "c"]},
      {"name": "y", "op": "silu", "args": ["u"]}]),
]
LINE = re.compile(r"compiled (\S+) for (\S+): compiled \(([\d.]+) ms")


def write_graphs(bin_dir, out_dir):
    """Graph files of every kernel: (family, label, path)."""
    graphs = []
    for dtype in ("f32", "bf16"):
        for name, inputs, nodes in ELEMENTWISE:
            g = {"inputs": [{"name": n, "shape": [1 << 24], "dtype": t or dtype} for n, t in inputs],
                 "nodes": nodes, "outputs": ["y"]}
            path = os.path.join(out_dir, f"ew_{name.replace('(', '_').replace(')', '').replace('*', 'x').replace('+', 'p')}_{dtype}.json")
            with open(path, "w") as f:
                json.dump(g, f)
            graphs.append(("elementwise", f"{name} {dtype}", path))
    rows_dir = os.path.join(out_dir, "rows")
    os.makedirs(rows_dir)
    subprocess.run([os.path.join(bin_dir, "kiln_bench_rows"), "--save-graphs", rows_dir], check=True,
                   stdout=subprocess.DEVNULL)
    for file in sorted(os.listdir(rows_dir)):
        graphs.append(("rows", file[len("rowsNN_"):-len(".json")], os.path.join(rows_dir, file)))
    return graphs


def baseline_ms(bin_dir, arch):
    out = subprocess.run([os.path.join(bin_dir, "kiln_bench_compile_baseline"), arch], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip())


def first_compile_ms(bin_dir, arch, graph, scratch):
    """(kernel name, ms) of the first kernel the graph compiles in a fresh process, empty cache."""
    cache = tempfile.mkdtemp(dir=scratch)
    out = subprocess.run([os.path.join(bin_dir, "kiln"), "--cache-dir", cache, "plan", "--compile", "--arch", arch, graph],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"compile.py: kiln plan --compile {graph} failed:\n{out.stdout}{out.stderr}")
    m = LINE.search(out.stdout + out.stderr)
    if not m:
        sys.exit(f"compile.py: no 'compiled' line from kiln plan --compile {graph}:\n{out.stdout}")
    subprocess.run(["rm", "-rf", cache], check=True)
    return m.group(1), float(m.group(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--baseline-bin", default=None)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.cpu is not None:
        try:
            os.sched_setaffinity(0, {args.cpu})  # inherited by every process it starts
        except (OSError, ValueError) as e:
            sys.exit(f"compile.py: --cpu {args.cpu}: {e} (this machine's cores: {sorted(os.sched_getaffinity(0))})")
    with tempfile.TemporaryDirectory() as scratch:
        graphs = write_graphs(args.bin, scratch)
        base, times, names = [], {g[2]: [] for g in graphs}, {}
        for r in range(args.rounds):
            for family, label, path in graphs:
                base.append(baseline_ms(args.baseline_bin or args.bin, args.arch))
                names[path], ms = first_compile_ms(args.bin, args.arch, path, scratch)
                times[path].append(ms)
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    b = statistics.median(base)
    print(f"baseline (tiny kernel, first NVRTC compile in a fresh process, {args.arch}): median {b:.1f} ms "
          f"over {len(base)} (min {min(base):.1f}, max {max(base):.1f})")
    print(f"{'family':<12} {'workload':<34} {'kernel':<40} {'ms':>7} {'x base':>7}")
    rows = []
    for family, label, path in graphs:
        ms = statistics.median(times[path])
        rows.append({"family": family, "workload": label, "kernel": names[path], "ms": ms, "ratio": ms / b})
        print(f"{family:<12} {label:<34} {names[path]:<40} {ms:7.1f} {ms / b:7.2f}")
    for family in ("elementwise", "rows"):
        ratios = [r["ratio"] for r in rows if r["family"] == family]
        print(f"{family}: {len(ratios)} kernels, median {statistics.median(ratios):.2f} x baseline, "
              f"max {max(ratios):.2f} x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"arch": args.arch, "baseline_ms": b, "baselines": base, "kernels": rows}, f, indent=1)


if __name__ == "__main__":
    main()
