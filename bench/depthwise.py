"""Depthwise conv2d (groups = C) beside cuDNN and the copy ceiling (issue 52's row), f16
channels_last, in one run: x, w and the result in PyTorch's channels_last memory, read and written
in place by kiln's plan. Each row is checked against PyTorch's fp64 convolution first, then kiln's
plan and cuDNN (cudnn.benchmark) are each replayed in a CUDA graph. The bytes are x read once, the
result written once and the weights: the copy ceiling is bench/run.py's 1-GiB copy, and a copy of
as many bytes (half read, half written), graphed, shows what a transfer this small takes.
Usage: python3 bench/depthwise.py (with build-device/python or build/python on PYTHONPATH)."""
import sys

import torch  # noqa: E402
from conv import measure  # noqa: E402
from run import copy_ceiling_gbs, graphed, median_us  # noqa: E402

# (N, C, H=W, R, stride): issue 52's row, then U-Net sizes, a stride 2 and a 5x5
ROWS = [(2, 320, 64, 3, 1), (2, 640, 32, 3, 1), (2, 1280, 16, 3, 1), (8, 256, 64, 3, 1),
        (2, 320, 64, 3, 2), (2, 320, 64, 5, 1)]


def row(n, c, hw, r, stride, ceiling):
    m = measure(n, c, c, hw, r, stride, groups=c)
    kiln_us, cudnn_us = m["kiln_us"], m["cudnn_us"]
    gbs = m["nbytes"] / kiln_us / 1e3
    # What moving this few bytes takes at all: a copy of as many (x's bytes and the result's).
    src = torch.empty(m["nbytes"] // 4, device="cuda", dtype=torch.float16)
    dst = torch.empty_like(src)
    copy_us = median_us(graphed(lambda: dst.copy_(src))[0], inner=10)
    ok = m["err"] <= 2e-2 and len(m["kernels"]) == 1
    print(f"depthwise {r}x{r} s{stride} N{n} C{c} {hw}x{hw}: kiln {kiln_us:6.1f} us "
          f"{gbs:5.0f} GB/s ({gbs / ceiling:.2f} of copy) | cuDNN {cudnn_us:6.1f} us | "
          f"kiln/cuDNN speed {cudnn_us / kiln_us:.2f}x | a copy of the same bytes "
          f"{copy_us:5.1f} us (kiln/copy {kiln_us / copy_us:.2f}x) | error {m['err']:.1e} "
          f"{'ok' if ok else 'FAIL'} | {m['kernels'][0]['name']}", flush=True)
    return ok


def main():
    ceiling = copy_ceiling_gbs()
    print(f"{torch.cuda.get_device_name()}: depthwise conv2d f16 channels_last, CUDA graphs; "
          f"copy ceiling {ceiling:.0f} GB/s", flush=True)
    ok = all([row(*r, ceiling) for r in ROWS])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
