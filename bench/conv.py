"""conv2d against cuDNN (issue 51's table): f16 channels_last, x, w and the result in PyTorch's
channels_last memory, read and written in place by kiln's plan (x as an [N, H, W, C] input
permuted, w as [K, R, S, C] permuted). Each row checked against PyTorch's fp64 convolution first,
then kiln's plan replayed in a CUDA graph beside cuDNN (cudnn.benchmark) replayed the same way,
in one run. TFLOP/s = 2*N*K*P*Q*C*R*S.
Usage: python3 bench/conv.py [--tune] (with build-device/python or build/python on PYTHONPATH).
--tune: `kiln tune` searches each row's kernel first (default and winner printed); the winner runs."""
import sys

import torch  # noqa: E402
from run import graphed, median_us, print_row, run_rows, tune_print  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()
F = torch.nn.functional
CL = torch.channels_last
# (N, C, K, H=W, R, stride): the table of issue 51
ROWS = [(2, 320, 320, 64, 3, 1), (2, 640, 640, 32, 3, 1), (2, 1280, 1280, 16, 3, 1),
        (8, 256, 256, 64, 3, 1), (2, 320, 320, 64, 3, 2), (2, 640, 1280, 32, 1, 1)]


def measure(n, c, k, hw, r, stride, groups=1, tune=False):
    """conv2d of an N x C x hw x hw f16 channels_last x with K R x R filters (padding R // 2) as
    one kiln plan, checked against PyTorch's fp64 convolution, then it and cuDNN replayed in CUDA
    graphs: kiln and cuDNN µs, the largest error, the plan's kernels, and the bytes of x, w and
    the result."""
    pad = r // 2
    g = kiln.Graph()
    x = kiln.permute(g.input("x", [n, hw, hw, c], "f16"), dims=[0, 3, 1, 2])
    w = kiln.permute(g.input("w", [k, r, r, c // groups], "f16"), dims=[0, 3, 1, 2])
    g.output(kiln.conv2d(x, w, stride=[stride], padding=[pad], groups=groups), "y")
    plan = kiln.Plan(g)
    xt = torch.randn(n, c, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=CL)
    wt = (torch.randn(k, c // groups, r, r, device="cuda", dtype=torch.float16) /
          (c // groups * r * r) ** 0.5).to(memory_format=CL)
    p = (hw + 2 * pad - r) // stride + 1
    y = torch.empty(n, k, p, p, device="cuda", dtype=torch.float16).to(memory_format=CL)
    inputs = dict(x=xt.permute(0, 2, 3, 1), w=wt.permute(0, 2, 3, 1))
    if tune:
        tune_print(ENGINE, g)
    plan.run(ENGINE, out={"y": y}, **inputs)
    ref = F.conv2d(xt.double(), wt.double(), stride=stride, padding=pad, groups=groups)
    err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, out={"y": y}, **inputs))[0], inner=10)
    torch.backends.cudnn.benchmark = True
    cudnn_us = median_us(graphed(lambda: F.conv2d(xt, wt, stride=stride, padding=pad,
                                                  groups=groups))[0], inner=10)
    nbytes = 2 * (xt.numel() + wt.numel() + y.numel())
    return dict(kiln_us=kiln_us, cudnn_us=cudnn_us, err=err, kernels=plan.kernels(), p=p,
                nbytes=nbytes)


def row(n, c, k, hw, r, stride, tune):
    m = measure(n, c, k, hw, r, stride, tune=tune)
    kiln_us, cudnn_us, p = m["kiln_us"], m["cudnn_us"], m["p"]
    flops = 2 * n * k * p * p * c * r * r
    ok = m["err"] <= 2e-2
    print_row(f"conv {r}x{r} s{stride} N{n} {c}->{k} {hw}x{hw}", flops, kiln_us, "cuDNN",
              cudnn_us, m["err"], ok, m["kernels"][0]["name"])
    return ok


if __name__ == "__main__":
    sys.exit(run_rows("conv2d f16 channels_last, CUDA graphs", ROWS, row))
