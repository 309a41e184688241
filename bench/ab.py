#!/usr/bin/env python3
"""A/B/A of two builds' benchmarks on one GPU: each benchmark binary of the old build, then the
new one, then the old one again, so that drift of the machine shows as a gap between the two old
runs. Prints every row's times and flags a row of the new build more than --limit slower than
both old runs (a change that must not slow anything down: a refactor of the host code, a
template left as it was).

  bench/ab.py OLD_BIN_DIR NEW_BIN_DIR [--bench kiln_bench_rows ...] [--limit 0.03] [--json F]

Rows are the JSON lines the benchmark binaries print: `workload`/`dtype`/`shape` name a row
and `kiln_us` is its time; `kiln_bench_launch`'s per-kernel times (`*_us_per_kernel`) are rows
of their own. Exits 1 if a row is flagged or a run fails.
"""
import argparse
import json
import subprocess
import sys

BENCHES = ("kiln_bench_elementwise", "kiln_bench_rows", "kiln_bench_launch")


def rows_of(output):
    """name -> microseconds of every timed row of one run's output."""
    rows = {}
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "launch" in r:
            for k, v in r["launch"].items():
                if k.endswith("_us_per_kernel"):
                    rows[f"launch {k}"] = v
        elif "kiln_us" in r:
            name = " ".join(str(r[k]) for k in ("workload", "dtype", "shape", "numel") if k in r)
            rows[name] = r["kiln_us"]
    return rows


def run(bin_dir, bench):
    r = subprocess.run([f"{bin_dir}/{bench}"], capture_output=True, text=True, timeout=400)
    if r.returncode != 0:
        sys.exit(f"ab: {bin_dir}/{bench} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return rows_of(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--bench", action="append", help="a benchmark binary (default: %s)" % ", ".join(BENCHES))
    ap.add_argument("--limit", type=float, default=0.03, help="flag rows slower than both old runs by more")
    ap.add_argument("--json", help="write every row's three times here")
    a = ap.parse_args()
    flagged, table = 0, []
    for bench in a.bench or BENCHES:
        old1, new, old2 = run(a.old, bench), run(a.new, bench), run(a.old, bench)
        print(f"== {bench}: old / new / old (us), new against the faster old")
        for name in old1:
            if name not in new or name not in old2:
                print(f"  {name}: not in every run")
                continue
            o1, n, o2 = old1[name], new[name], old2[name]
            slow = n > (1 + a.limit) * max(o1, o2)
            flagged += slow
            ratio = n / min(o1, o2) if min(o1, o2) > 0 else float("nan")
            print(f"  {name:58s} {o1:10.3f} {n:10.3f} {o2:10.3f}  {ratio:6.3f}{'  SLOWER' if slow else ''}")
            table.append({"bench": bench, "row": name, "old1": o1, "new": n, "old2": o2})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(table, f, indent=1)
    worst = max((r["new"] / max(r["old1"], r["old2"]) for r in table if max(r["old1"], r["old2"]) > 0), default=0)
    print(f"ab: {len(table)} rows, {flagged} more than {a.limit:.0%} slower than both old runs; "
          f"worst new / slower old: {worst:.3f}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
