"""cuDNN's kernel for issue 51's convolution rows and issue 52's depthwise ones, for ncu: each
row's convolution warmed up (cudnn.benchmark picks its algorithm), then run once inside an NVTX
range "measure", so that
`ncu --nvtx --nvtx-include measure/` profiles only that launch (its kernel name tells cuDNN's tile
and warpgroups; Launch Statistics its grid, cluster size and shared memory).
Usage (GPU machine): ncu --set full --nvtx --nvtx-include measure/ -o cudnn_c1280 \
  python3 bench/trace/cudnn_conv_probe.py c1280
  (rows: c320 c640 c1280 n8 s2 1x1; depthwise, groups = C: dw_c320 dw_n8)"""
import sys

import torch

F = torch.nn.functional
CL = torch.channels_last
# name: (N, C, K, H = W, R, stride, groups), bench/conv.py's and bench/depthwise.py's ROWS
ROWS = {"c320": (2, 320, 320, 64, 3, 1, 1), "c640": (2, 640, 640, 32, 3, 1, 1),
        "c1280": (2, 1280, 1280, 16, 3, 1, 1), "n8": (8, 256, 256, 64, 3, 1, 1),
        "s2": (2, 320, 320, 64, 3, 2, 1), "1x1": (2, 640, 1280, 32, 1, 1, 1),
        "dw_c320": (2, 320, 320, 64, 3, 1, 320), "dw_n8": (8, 256, 256, 64, 3, 1, 256)}


def main():
    torch.backends.cudnn.benchmark = True
    for name in sys.argv[1:]:
        n, c, k, hw, r, stride, groups = ROWS[name]
        x = torch.randn(n, c, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=CL)
        w = torch.randn(k, c // groups, r, r, device="cuda",
                        dtype=torch.float16).to(memory_format=CL)
        for _ in range(5):
            F.conv2d(x, w, stride=stride, padding=r // 2, groups=groups)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("measure")
        F.conv2d(x, w, stride=stride, padding=r // 2, groups=groups)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
