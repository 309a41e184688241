#!/usr/bin/env python3
"""Seed 001's GFN leapfrog step on kiln (build/bin/gfn) beside PyTorch in one device run: one step
(eager, torch.compile, a CUDA graph) over back-to-back calls, and 8 steps (eager, torch.compile,
a CUDA graph of the 8 steps), at each shape and storage dtype the app runs. PyTorch computes in
the storage dtype (its matmuls accumulate in f32). Prints the app's JSON lines and a table."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import graphed, median_us, run_app  # noqa: E402

STEPS, DT = 8, 0.1


def christoffel(v, U, W):
    return torch.square(v @ U) @ W.T


def step(x, v, f, U, W):
    vh = v + 0.5 * DT * (f - christoffel(v, U, W))
    x = x + DT * vh
    return x, vh + 0.5 * DT * (f - christoffel(vh, U, W))


def steps(x, v, f, U, W):
    for _ in range(STEPS):
        x, v = step(x, v, f, U, W)
    return x, v


def peers(B, d, r, dtype):
    dev, t = "cuda", {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    x, v, f = (torch.randn(B, d, device=dev, dtype=t) for _ in range(3))
    U = (torch.randn(d, r, device=dev) * 0.5 / d ** 0.5).to(t)
    W = (torch.randn(d, r, device=dev) * 0.5 / r ** 0.5).to(t)
    one = lambda: step(x, v, f, U, W)
    eight = lambda: steps(x, v, f, U, W)
    c1, c8 = torch.compile(step), torch.compile(steps)
    return {"eager_us": median_us(one, inner=10),
            "compile_us": median_us(lambda: c1(x, v, f, U, W), inner=10),
            "graph_us": median_us(graphed(one)[0], inner=10),
            "steps_eager_us": median_us(eight, reps=10),
            "steps_compile_us": median_us(lambda: c8(x, v, f, U, W), reps=10),
            "steps_graph_us": median_us(graphed(eight)[0], reps=10)}


def main():
    rows, status = run_app(__doc__, "gfn")
    print(f"| B, d, r | dtype | kiln step µs | eager | torch.compile | CUDA graph | kiln / compile "
          f"| kiln / eager | {STEPS} steps: kiln replay | eager | compile | CUDA graph | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        t = peers(r["B"], r["d"], r["r"], r["dtype"])
        print(f"| {r['B']}, {r['d']}, {r['r']} | {r['dtype']} | {r['step_us']:.1f} | {t['eager_us']:.1f} "
              f"| {t['compile_us']:.1f} | {t['graph_us']:.1f} | {r['step_us'] / t['compile_us']:.2f} "
              f"| {r['step_us'] / t['eager_us']:.2f} | {r[f'steps{STEPS}_replay_us']:.1f} "
              f"| {t['steps_eager_us']:.1f} | {t['steps_compile_us']:.1f} | {t['steps_graph_us']:.1f} "
              f"| {r['check']} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
