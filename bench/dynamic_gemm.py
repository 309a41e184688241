#!/usr/bin/env python3
"""A dynamic-batch MLP layer, gelu(linear(x, w, b)) over x[?, 768] bf16 and w[3072, 768], on
the GPU: (1) with only a bundle made by `kiln precompile` on a machine without a GPU (KILN_BUNDLE,
an empty cache), batches 1, 7, 300, 4096 and 32768 run with no compile, each checked against an
fp64 reference; (2) at M = 16, 4096 and 32768 the dynamic plan's kernel (its M bucket's) against
the plan of that static shape, both timed the same way in this run (10 calls a CUDA graph, the
median of 25 replays). Prints a table; exits 1 on a compile, a failed check or a ratio < 0.95.

Usage: KILN_BUNDLE=mlp.kbundle KILN_CACHE_DIR=$(mktemp -d) bench/dynamic_gemm.py"""
import os
import sys

import torch

import kiln

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import graphed, median_us  # noqa: E402

K, N = 768, 3072


def mlp(rows):
    g = kiln.Graph()
    x = g.input("x", [rows, K], "bf16")
    w = g.input("w", [N, K], "bf16")
    b = g.input("b", [N], "bf16")
    g.output(kiln.gelu(kiln.linear(x, w, b)), "y")
    return kiln.Plan(g)


def reference(x, w, b):
    h = x.double() @ w.double().T + b.double()
    return torch.nn.functional.gelu(h)


def replay_us(fn, calls=10):
    """Median of 25 replays of a CUDA graph of `calls` calls, per call."""
    replay, _ = graphed(lambda: [fn() for _ in range(calls)])
    return median_us(replay, reps=25) / calls


def main():
    torch.manual_seed(0)
    e = kiln.Engine()
    w = (torch.randn(N, K, device="cuda") / K**0.5).to(torch.bfloat16)
    b = torch.randn(N, device="cuda").to(torch.bfloat16)
    dynamic = mlp(None)
    ok = True
    print(f"{torch.cuda.get_device_name()}, bundles: {os.environ.get('KILN_BUNDLE', '(none)')}")
    for rows in (1, 7, 300, 4096, 32768):
        x = torch.randn(rows, K, device="cuda").to(torch.bfloat16)
        out = torch.full((rows, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        before = e.counters()
        dynamic.run(e, {"x": x, "w": w, "b": b}, out={"y": out})
        torch.cuda.synchronize()
        after = e.counters()
        compiles = after["compiles"] - before["compiles"]
        want = reference(x, w, b)
        err = ((out.double() - want).norm() / want.norm()).item()
        good = compiles == 0 and err < 1e-2 and not out.isnan().any().item()
        ok &= good
        print(f"batch {rows:6d}: {compiles} compiles, {after['bundle_hits'] - before['bundle_hits']}"
              f" bundle hits, rel err {err:.2e} {'ok' if good else 'FAIL'}")
    print(f"{'M':>6} {'dynamic_us':>11} {'static_us':>10} {'ratio':>6}  kernel")
    for rows in (16, 4096, 32768):
        x = torch.randn(rows, K, device="cuda").to(torch.bfloat16)
        y1 = torch.empty(rows, N, device="cuda", dtype=torch.bfloat16)
        y2 = torch.empty_like(y1)
        static = mlp(rows)
        args = {"x": x, "w": w, "b": b}
        # Alternate the two twice; each keeps its faster time (the same card, the same caches).
        dyn_us = stat_us = float("inf")
        for _ in range(2):
            dyn_us = min(dyn_us, replay_us(lambda: dynamic.run(e, args, out={"y": y1})))
            stat_us = min(stat_us, replay_us(lambda: static.run(e, args, out={"y": y2})))
        same = torch.equal(y1, y2)
        ratio = stat_us / dyn_us
        good = same and ratio >= 0.95
        ok &= good
        name = static.kernels(e.arch)[0]["name"]
        print(f"{rows:6d} {dyn_us:11.2f} {stat_us:10.2f} {ratio:6.3f}  {name}"
              f"{'' if same else ' (outputs differ)'} {'ok' if good else 'FAIL'}")
    print(f"dynamic_gemm: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
