#!/usr/bin/env python3
"""Every default attention kernel of a grid of calls, compiled without a GPU, and the ones that
spill. The grid: bf16 and f16; D 40, 64, 80, 96, 128, 160, 192, 256; no causal diagonal,
top-left, bottom-right; no mask, a bool mask, an additive one; with and without kv_lens; Sq 333
(the prefill paths) and 3 (decode); q [2, 8, Sq, D] over k and v [2, 2, 500, D]. Each call is a
graph file; `kiln precompile` compiles them all for the archs into an empty cache, and each
cache entry's metadata gives the kernel's registers and spilled bytes. About 4 minutes on two
cores for sm_80 and sm_90a.
Usage: python3 bench/trace/attention_spill_grid.py [--kiln build/bin/kiln] [--arch sm_80,sm_90a]
Exit 1 if a kernel spills."""
import argparse
import glob
import itertools
import json
import os
import subprocess
import sys
import tempfile


def write_graphs(out_dir):
    n = 0
    for dt, d, causal, mask, lens, sq in itertools.product(
            ["bf16", "f16"], [40, 64, 80, 96, 128, 160, 192, 256],
            ["none", "top_left", "bottom_right"], ["none", "bool", "additive"], [False, True],
            [333, 3]):
        inputs = [{"name": "q", "shape": [2, 8, sq, d], "dtype": dt},
                  {"name": "k", "shape": [2, 2, 500, d], "dtype": dt},
                  {"name": "v", "shape": [2, 2, 500, d], "dtype": dt}]
        if mask != "none":
            inputs.append({"name": "m", "shape": [sq, 500], "dtype": "bool" if mask == "bool" else dt})
        if lens:
            inputs.append({"name": "n", "shape": [2], "dtype": "i64"})
        attrs = {"causal": causal != "none"}
        if causal != "none":
            attrs["causal_align"] = causal
        graph = {"inputs": inputs, "outputs": ["o"],
                 "nodes": [{"name": "o", "op": "attention", "args": [i["name"] for i in inputs],
                            "attrs": attrs}]}
        with open(os.path.join(out_dir, f"g{n:04d}.json"), "w") as f:
            json.dump(graph, f)
        n += 1
    return n


def entries(cache_dir):
    """Each cache entry's metadata (the JSON object after the entry's magic)."""
    out = []
    for path in glob.glob(os.path.join(cache_dir, "*.kiln")):
        with open(path, "rb") as f:
            data = f.read()
        start = data.find(b'{"arch"')
        end = data.find(b"}", start)
        if start >= 0 and end > start:
            out.append(json.loads(data[start:end + 1]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default="build/bin/kiln")
    ap.add_argument("--arch", default="sm_80,sm_90a")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        graphs, cache = os.path.join(work, "graphs"), os.path.join(work, "cache")
        os.makedirs(graphs)
        n = write_graphs(graphs)
        run = subprocess.run([args.kiln, "--cache-dir", cache, "precompile", "--arch", args.arch, "--json"]
                             + sorted(glob.glob(os.path.join(graphs, "*.json"))),
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"attention_spill_grid: kiln precompile failed:\n{run.stderr[-3000:]}")
        rows = entries(cache)
    spilled = sorted((r["arch"], r["name"], r["registers"], r["spill_bytes"]) for r in rows
                     if r["spill_bytes"] != 0)
    print(f"attention_spill_grid: {n} calls, {len(rows)} kernels for {args.arch}, "
          f"{len(spilled)} spilling, the most registers {max(r['registers'] for r in rows)}")
    for arch, name, regs, spill in spilled:
        print(f"  {arch} {name}: {spill} bytes spilled at {regs} registers")
    return 1 if spilled else 0


if __name__ == "__main__":
    sys.exit(main())
