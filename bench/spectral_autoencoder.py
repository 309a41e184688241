#!/usr/bin/env python3
"""Seed 002's spectral shape autoencoder on kiln (build/bin/spectral_autoencoder: one plan of six
GEMM kernels, replayed) beside PyTorch (f32, TF32 off: the seed's numerics) in one device run:
eager and a CUDA graph of the forward, at each batch the app runs. Prints the app's JSON lines and
a table."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import graphed, median_us, run_app  # noqa: E402

SLICES, IN, CODE, BASIS, HIDDEN = 32, 256, 128, 256, 64


def peers(B):
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    r = lambda *s: torch.rand(*s, device=dev) * 2 - 1
    x = r(B, SLICES, IN)
    w_enc, b_enc = r(CODE, IN) / IN ** 0.5, r(CODE) * 0.1
    w1, b1 = r(HIDDEN, BASIS) / BASIS ** 0.5, r(HIDDEN) * 0.1
    w2, b2 = r(BASIS, HIDDEN) / HIDDEN ** 0.5, r(BASIS) * 0.1
    w_dec, b_dec = r(IN, CODE) / CODE ** 0.5, r(IN) * 0.1
    basis, _ = torch.linalg.qr(torch.randn(SLICES * CODE, BASIS, device=dev))

    def forward():
        h = F.gelu(F.linear(x, w_enc, b_enc)).reshape(B, SLICES * CODE)
        z = h @ basis
        v = F.linear(F.gelu(F.linear(z, w1, b1)), w2, b2)
        return F.linear((v @ basis.T).reshape(B, SLICES, CODE), w_dec, b_dec)

    with torch.no_grad():
        return {"eager_us": median_us(forward, inner=10),
                "graph_us": median_us(graphed(forward)[0], inner=10)}


def main():
    rows, status = run_app(__doc__, "spectral_autoencoder")
    print("| B | kiln replay µs | kiln run µs | PyTorch eager | CUDA graph | kiln / CUDA graph "
          "| max abs error | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        t = peers(r["B"])
        print(f"| {r['B']} | {r['replay_us']:.1f} | {r['run_us']:.1f} | {t['eager_us']:.1f} "
              f"| {t['graph_us']:.1f} | {r['replay_us'] / t['graph_us']:.2f} "
              f"| {r['max_abs_err']:.1e} | {r['check']} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
