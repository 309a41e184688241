"""f16 products of a few tiles (the sizes of a transformer's projections at small batch, a U-Net's
1x1 convolutions as products) against cuBLAS (torch.mm), each replayed in a CUDA graph in one
run: for most of them the tile estimate splits K between the blocks of a cluster or narrows the
tile so that the GPU fills. Each product checked against an f32 product first; B as linear's
[N, K] (K-contiguous) or as [K, N].
Usage: python3 bench/gemm_medium.py [--tune] (with build-device/python or build/python on
PYTHONPATH). --tune: `kiln tune` searches each product's kernel first (default and winner
printed; its space has widths 64, 128 and 256 beside the default); the winner runs."""
import sys

import torch  # noqa: E402
from run import graphed, median_us, print_row, run_rows, tune_print  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()
# (M, K, N, B as [N, K])
ROWS = [(1024, 4096, 256, True), (256, 4096, 4096, True), (128, 4096, 4096, True),
        (512, 4096, 4096, True), (1024, 1024, 1024, True), (2048, 640, 1280, True),
        (2048, 1280, 640, True), (2048, 1280, 640, False), (4096, 320, 320, True),
        (4096, 1024, 1024, True)]


def row(m, k, n, b_nk, tune):
    g = kiln.Graph()
    a = g.input("a", [m, k], "f16")
    b = g.input("b", [n, k] if b_nk else [k, n], "f16")
    g.output(kiln.linear(a, b) if b_nk else kiln.matmul(a, b), "c")
    if tune:
        tune_print(ENGINE, g)
    plan = kiln.Plan(g)
    at = torch.randn(m, k, device="cuda", dtype=torch.float16)
    bt = torch.randn(*([n, k] if b_nk else [k, n]), device="cuda", dtype=torch.float16) / k ** 0.5
    bb = bt.t() if b_nk else bt
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    plan.run(ENGINE, out={"c": c}, a=at, b=bt)
    ref = at.float() @ bb.float()
    err = ((c.float() - ref).abs().max() / (1 + ref.abs().max())).item()
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, out={"c": c}, a=at, b=bt))[0], inner=10)
    cublas_us = median_us(graphed(lambda: torch.mm(at, bb, out=c))[0], inner=10)
    ok = err <= 1e-2
    print_row(f"{m}x{k}x{n} B {'[N, K]' if b_nk else '[K, N]'}", 2 * m * n * k, kiln_us, "cuBLAS",
              cublas_us, err, ok, plan.kernels()[0]["name"])
    return ok


if __name__ == "__main__":
    sys.exit(run_rows("f16 products of a few tiles, CUDA graphs", ROWS, row))
