"""The U-Net skip concat of issue 48: two [2, 640, 32, 32] f16 channels_last halves, one a SiLU
and one a scale produced in the plan, concatenated along the channels into [2, 1280, 32, 32]
channels_last. kiln's plan (one kernel writing each half into its window of the result, no copy)
beside PyTorch eager and torch.compile, a plain copy of the same bytes and the 1-GiB copy
ceiling, all replayed in CUDA graphs in one run; values checked against fp64 first.
Usage: python3 bench/unet_concat.py (with build-device/python or build/python on PYTHONPATH)."""
import sys

import torch  # noqa: E402
from run import copy_ceiling_gbs, graphed, median_us  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()
F = torch.nn.functional


def skip_concat(n, c, h, w, ceiling):
    g = kiln.Graph()
    halves = [kiln.permute(g.input(name, [n, h, w, c], "f16"), dims=[0, 3, 1, 2])
              for name in ("a", "b")]
    g.output(kiln.concat(kiln.silu(halves[0]), halves[1] * 0.5, axis=1), "y")
    plan = kiln.Plan(g)
    kernels = len(plan.kernels())
    cl = torch.channels_last
    a, b = (torch.randn(n, c, h, w, device="cuda", dtype=torch.float16).to(memory_format=cl)
            for _ in range(2))
    t = dict(a=a.permute(0, 2, 3, 1), b=b.permute(0, 2, 3, 1))
    y = torch.empty(n, 2 * c, h, w, device="cuda", dtype=torch.float16).to(memory_format=cl)
    plan.run(ENGINE, out={"y": y}, **t)

    def torch_block(a, b):
        return torch.cat([F.silu(a), b * 0.5], dim=1)

    ref = torch_block(a.double(), b.double())
    err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, out={"y": y}, **t))[0], inner=10)
    compiled = torch.compile(torch_block)
    src, dst = torch.cat([a, b], dim=1), torch.empty_like(y)
    peers = {"eager": median_us(graphed(lambda: torch_block(a, b))[0], inner=10),
             "torch.compile": median_us(graphed(lambda: compiled(a, b))[0], inner=10),
             "copy of the same bytes": median_us(graphed(lambda: dst.copy_(src))[0], inner=10)}
    nbytes = 2 * y.numel() * 2
    gbs = nbytes / kiln_us / 1e3
    cells = [f"concat(silu(a), b*0.5) N{n} 2x C{c} {h}x{w} f16 channels_last ({kernels} kernel"
             f"{'s' if kernels > 1 else ''}): kiln {kiln_us:6.2f} us {gbs:5.0f} GB/s "
             f"({gbs / ceiling:.2f} of the copy ceiling), error {err:.1e}"]
    cells += [f"{p} {us:6.2f} us ({kiln_us / us:.2f}x)" for p, us in peers.items()]
    ok = err <= 2**-9 and kernels == 1
    cells.append("ok" if ok else "FAIL")
    print(" | ".join(cells), flush=True)
    return ok


def main():
    ceiling = copy_ceiling_gbs()
    print(f"{torch.cuda.get_device_name()}: copy ceiling {ceiling:.0f} GB/s", flush=True)
    return 0 if skip_concat(2, 640, 32, 32, ceiling) else 1


if __name__ == "__main__":
    sys.exit(main())
