#!/usr/bin/env python3
"""Seed 003's backend op set (RustyGradients) on kiln (build/bin/rusty_ops) beside PyTorch in one
device run: per op, dtype and size, kiln's eager call against PyTorch eager, kiln's replayed
one-op plan against the op in a CUDA graph, and at 1M elements torch.compile too. Times are
per call over back-to-back calls. Prints the app's JSON lines, a table, and how many rows meet
each of the issue's targets."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import graphed, median_us, run_app  # noqa: E402

COLS = 1024
OPS = {
    "add": lambda x, p, w, b, o: x + p,
    "sub": lambda x, p, w, b, o: x - p,
    "mul": lambda x, p, w, b, o: x * p,
    "div": lambda x, p, w, b, o: x / p,
    "relu": lambda x, p, w, b, o: torch.relu(x),
    "relu_backward": lambda x, p, w, b, o: torch.ops.aten.threshold_backward(p, x, 0),
    "sigmoid": lambda x, p, w, b, o: torch.sigmoid(x),
    "gelu": lambda x, p, w, b, o: F.gelu(x),
    "exp": lambda x, p, w, b, o: torch.exp(x),
    "log": lambda x, p, w, b, o: torch.log(p),
    "powf": lambda x, p, w, b, o: torch.pow(p, 1.5),
    "softmax": lambda x, p, w, b, o: torch.softmax(x, -1),
    "layernorm": lambda x, p, w, b, o: F.layer_norm(x, (COLS,), w, b, 1e-5),
    "sum": lambda x, p, w, b, o: x.sum(),
    "fill": lambda x, p, w, b, o: o.fill_(0.5),
    "copy": lambda x, p, w, b, o: o.copy_(x),
    "scalar_mul": lambda x, p, w, b, o: x * 1.5,
    "scalar_add": lambda x, p, w, b, o: x + 1.5,
}


def peers(op, dtype, n):
    t = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    dev = "cuda"
    x = torch.rand(n // COLS, COLS, device=dev, dtype=t) * 4 - 2
    p = torch.rand(n // COLS, COLS, device=dev, dtype=t) * 1.5 + 0.5
    w = torch.rand(COLS, device=dev, dtype=t) + 0.5
    b = torch.rand(COLS, device=dev, dtype=t)
    o = torch.empty_like(x)
    fn = OPS[op]
    call = lambda: fn(x, p, w, b, o)
    out = {"eager_us": median_us(call, inner=10), "graph_us": median_us(graphed(call)[0], inner=10)}
    if n == 1 << 20:
        c = torch.compile(fn)
        out["compile_us"] = median_us(lambda: c(x, p, w, b, o), inner=10)
    return out


def main():
    rows, status = run_app(__doc__, "rusty_ops")
    print("| op | dtype | n | kiln eager µs | torch eager | ratio | kiln replay | CUDA graph | ratio "
          "| torch.compile (1M) | kiln eager / torch best (1M) | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    met = {"eager": 0, "replay": 0, "1M": 0}
    big = 0
    for r in rows:
        t = peers(r["op"], r["dtype"], r["n"])
        re, rr = r["eager_us"] / t["eager_us"], r["replay_us"] / t["graph_us"]
        met["eager"] += re <= 1.05
        met["replay"] += rr <= 1.05
        tail = "| | "
        if "compile_us" in t:
            big += 1
            best = r["eager_us"] / min(t["eager_us"], t["compile_us"])
            met["1M"] += best <= 1.10
            tail = f"| {t['compile_us']:.1f} | {best:.2f} "
        print(f"| {r['op']} | {r['dtype']} | {r['n']} | {r['eager_us']:.1f} | {t['eager_us']:.1f} "
              f"| {re:.2f} | {r['replay_us']:.1f} | {t['graph_us']:.1f} | {rr:.2f} {tail}| {r['check']} |")
    print(f"rows: {len(rows)}; eager <= 1.05x torch eager: {met['eager']}; replay <= 1.05x CUDA graph: "
          f"{met['replay']}; at 1M within 10% of torch's best: {met['1M']} of {big}; "
          f"checks failed: {sum(r['check'] != 'ok' for r in rows)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
