#!/usr/bin/env python3
"""Seed 004's diffusion step on kiln (build/bin/diffusion_step) beside PyTorch in one device run:
one step (eager, torch.compile, a CUDA graph) at each shape over back-to-back calls, and the
50-step loop (eager, a CUDA graph of the 50 steps). Prints the kiln app's JSON lines and one
table row per shape."""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import graphed, median_us, run_app  # noqa: E402

STEPS = 50


def abar(k):
    t = 1.0 - k / STEPS
    f = math.cos((t + 0.008) / 1.008 * math.pi / 2)
    return min(max(f * f, 1e-4), 0.9999)


def step(x, eps, prev, a, b, w):
    """The step as the seed writes it: f16 tensors, Python float coefficients."""
    x0 = (x - a * eps) * b
    return torch.clamp(w * x0 + (1 - w) * prev, -1, 1)


def loop(x, epss, w):
    s = x
    for k, eps in enumerate(epss):
        ab = abar(k)
        x0 = (s - math.sqrt(1 - ab) * eps) * (1 / math.sqrt(ab))
        s = torch.clamp(w * x0 + (1 - w) * s, -1, 1)
    return s


def peers(shape):
    dev, h = "cuda", torch.float16
    x, eps, prev = (torch.randn(*shape, device=dev, dtype=h) for _ in range(3))
    ab = abar(30)
    a, b, w = math.sqrt(1 - ab), 1 / math.sqrt(ab), 0.7
    one = lambda: step(x, eps, prev, a, b, w)
    compiled = torch.compile(step)
    out = {"eager_us": median_us(one, inner=10),
           "compile_us": median_us(lambda: compiled(x, eps, prev, a, b, w), inner=10),
           "graph_us": median_us(graphed(one)[0], inner=10)}
    epss = [torch.randn(*shape, device=dev, dtype=h) for _ in range(STEPS)]
    out["loop50_eager_us"] = median_us(lambda: loop(x, epss, 0.7), reps=10)
    out["loop50_graph_us"] = median_us(graphed(lambda: loop(x, epss, 0.7))[0], reps=10)
    return out


def main():
    rows, status = run_app(__doc__, "diffusion_step")
    print(f"| shape | kiln step µs (run / replay) | eager | torch.compile | CUDA graph | kiln / compile "
          f"| 50 steps: kiln replay ({'kernels'}) | eager | CUDA graph | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        t = peers([int(v) for v in r["shape"].split("x")])
        print(f"| {r['shape']} | {r['step_us']:.1f} / {r['step_replay_us']:.1f} | {t['eager_us']:.1f} "
              f"| {t['compile_us']:.1f} | {t['graph_us']:.1f} | {r['step_us'] / t['compile_us']:.2f} "
              f"| {r['loop50_replay_us']:.1f} ({r['loop_kernels']}) | {t['loop50_eager_us']:.1f} "
              f"| {t['loop50_graph_us']:.1f} | {r['check']} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
