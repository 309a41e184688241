"""Depthwise conv2d (groups = C) beside cuDNN and the copy ceiling (issue 52's row), f16
channels_last, in one run: x, w and the result in PyTorch's channels_last memory, read and written
in place by kiln's plan. Each row is checked against PyTorch's fp64 convolution first, then kiln's
plan and cuDNN (cudnn.benchmark) are each replayed in a CUDA graph. The bytes are x read once, the
result written once and the weights: the copy ceiling is bench/run.py's 1-GiB copy.
Usage: python3 bench/depthwise.py (with build-device/python or build/python on PYTHONPATH)."""
import sys

import torch  # noqa: E402
from run import copy_ceiling_gbs, graphed, median_us  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()
F = torch.nn.functional
CL = torch.channels_last
# (N, C, H=W, R, stride): issue 52's row, then U-Net sizes and a stride 2
ROWS = [(2, 320, 64, 64, 3, 1), (2, 640, 32, 32, 3, 1), (2, 1280, 16, 16, 3, 1),
        (8, 256, 64, 64, 3, 1), (2, 320, 64, 64, 3, 2), (2, 320, 64, 64, 5, 1)]


def row(n, c, h, w, r, stride, ceiling):
    pad = r // 2
    g = kiln.Graph()
    x = kiln.permute(g.input("x", [n, h, w, c], "f16"), dims=[0, 3, 1, 2])
    wt_in = kiln.permute(g.input("w", [c, r, r, 1], "f16"), dims=[0, 3, 1, 2])
    g.output(kiln.conv2d(x, wt_in, stride=[stride], padding=[pad], groups=c), "y")
    plan = kiln.Plan(g)
    xt = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16).to(memory_format=CL)
    wt = (torch.randn(c, 1, r, r, device="cuda", dtype=torch.float16) / r).to(memory_format=CL)
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
    y = torch.empty(n, c, p, q, device="cuda", dtype=torch.float16).to(memory_format=CL)
    inputs = dict(x=xt.permute(0, 2, 3, 1), w=wt.permute(0, 2, 3, 1))
    plan.run(ENGINE, out={"y": y}, **inputs)
    ref = F.conv2d(xt.double(), wt.double(), stride=stride, padding=pad, groups=c)
    err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, out={"y": y}, **inputs))[0], inner=10)
    torch.backends.cudnn.benchmark = True
    cudnn_us = median_us(graphed(lambda: F.conv2d(xt, wt, stride=stride, padding=pad,
                                                  groups=c))[0], inner=10)
    nbytes = 2 * (xt.numel() + y.numel() + wt.numel())
    gbs = nbytes / kiln_us / 1e3
    kernels = plan.kernels()
    ok = err <= 2e-2 and len(kernels) == 1
    print(f"depthwise {r}x{r} s{stride} N{n} C{c} {h}x{w}: kiln {kiln_us:6.1f} us {gbs:5.0f} GB/s "
          f"({gbs / ceiling:.2f} of copy) | cuDNN {cudnn_us:6.1f} us | kiln/cuDNN speed "
          f"{cudnn_us / kiln_us:.2f}x | error {err:.1e} {'ok' if ok else 'FAIL'} | "
          f"{kernels[0]['name']}", flush=True)
    return ok


def main():
    ceiling = copy_ceiling_gbs()
    print(f"{torch.cuda.get_device_name()}: depthwise conv2d f16 channels_last, CUDA graphs; "
          f"copy ceiling {ceiling:.0f} GB/s", flush=True)
    ok = all([row(*r, ceiling) for r in ROWS])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
