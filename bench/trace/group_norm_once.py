"""GroupNorm(32)+SiLU, f16 channels_last in and out, run a few times at one shape: a process for
ncu to profile (bench/group_norm.py times the same plans graphed beside torch).
Usage: PYTHONPATH=build-device/python python3 bench/trace/group_norm_once.py N C H W
  e.g. ncu --set full --kernel-name regex:"group_rows|rows" --launch-skip 1 --launch-count 1 \\
         python3 bench/trace/group_norm_once.py 2 320 64 64"""
import sys

import torch

import kiln


def main():
    n, c, h, w = (int(v) for v in sys.argv[1:5])
    engine = kiln.Engine()
    g = kiln.Graph()
    x = kiln.permute(g.input("x", [n, h, w, c], "f16"), dims=[0, 3, 1, 2])
    gamma, beta = g.input("gamma", [c], "f16"), g.input("beta", [c], "f16")
    g.output(kiln.silu(kiln.group_norm(x, gamma, beta, groups=32, eps=1e-5)), "y")
    plan = kiln.Plan(g)
    print([k["name"] for k in plan.kernels()], flush=True)
    xt = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16).to(
        memory_format=torch.channels_last)
    t = dict(x=xt.permute(0, 2, 3, 1), gamma=torch.randn(c, device="cuda", dtype=torch.float16),
             beta=torch.randn(c, device="cuda", dtype=torch.float16))
    y = torch.empty(n, c, h, w, device="cuda", dtype=torch.float16).to(
        memory_format=torch.channels_last)
    for _ in range(3):
        plan.run(engine, out={"y": y}, **t)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
