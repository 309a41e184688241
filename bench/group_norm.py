"""GroupNorm(32) + SiLU over channels_last f16 activations of an SD U-Net (issue 48's shapes),
one kiln kernel beside PyTorch eager and torch.compile, and the copy ceiling, in one run. Each
is under ~100 us, so kiln and the peers are timed replayed in a CUDA graph (bench/run.py's
graphed). kiln reads the channels_last input in place (an [N, H, W, C] tensor permuted to NCHW)
and writes its output NCHW or channels_last (both timed); its values are checked against fp64
first.
Usage: python3 bench/group_norm.py (with build-device/python or build/python on PYTHONPATH)."""
import sys

import torch  # noqa: E402
from run import copy_ceiling_gbs, graphed, median_us  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()
F = torch.nn.functional
SHAPES = [(2, 320, 64, 64), (2, 640, 32, 32), (2, 1280, 16, 16)]


def one_shape(n, c, h, w, ceiling, out_format):
    g = kiln.Graph()
    x = kiln.permute(g.input("x", [n, h, w, c], "f16"), dims=[0, 3, 1, 2])
    gamma, beta = g.input("gamma", [c], "f16"), g.input("beta", [c], "f16")
    g.output(kiln.silu(kiln.group_norm(x, gamma, beta, groups=32, eps=1e-5)), "y")
    plan = kiln.Plan(g)
    kernels = len(plan.kernels())
    xt = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16).to(
        memory_format=torch.channels_last)
    t = dict(x=xt.permute(0, 2, 3, 1), gamma=torch.randn(c, device="cuda", dtype=torch.float16),
             beta=torch.randn(c, device="cuda", dtype=torch.float16))
    # The output as NCHW, or channels_last as torch's is for a channels_last input: with it the
    # kernel's reads and writes both run along a group's channels (packs wider than 1).
    y = torch.empty(n, c, h, w, device="cuda", dtype=torch.float16).to(memory_format=out_format)
    plan.run(ENGINE, out={"y": y}, **t)

    def torch_block(x, gamma, beta):
        return F.silu(F.group_norm(x, 32, gamma, beta, 1e-5))

    ref = torch_block(xt.double(), t["gamma"].double(), t["beta"].double())
    err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, out={"y": y}, **t))[0], inner=10)
    compiled = torch.compile(torch_block)
    peers = {"eager": median_us(graphed(lambda: torch_block(xt, t["gamma"], t["beta"]))[0],
                                inner=10),
             "torch.compile": median_us(graphed(lambda: compiled(xt, t["gamma"], t["beta"]))[0],
                                        inner=10)}
    nbytes = 2 * xt.numel() * 2 + 2 * c * 2
    gbs = nbytes / kiln_us / 1e3
    out = "channels_last" if out_format == torch.channels_last else "NCHW"
    cells = [f"GroupNorm(32)+SiLU N{n} C{c} {h}x{w} f16 channels_last, {out} out ({kernels} kernel"
             f"{'s' if kernels > 1 else ''}): kiln {kiln_us:6.1f} us {gbs:5.0f} GB/s "
             f"({gbs / ceiling:.2f} of copy), error {err:.1e}"]
    cells += [f"{p} {us:6.1f} us ({kiln_us / us:.2f}x)" for p, us in peers.items()]
    ok = err <= 2**-9 and kernels == 1
    cells.append("ok" if ok else "FAIL")
    print(" | ".join(cells), flush=True)
    return ok


def main():
    ceiling = copy_ceiling_gbs()
    print(f"{torch.cuda.get_device_name()}: copy ceiling {ceiling:.0f} GB/s", flush=True)
    ok = True
    for s in SHAPES:
        for out_format in (torch.contiguous_format, torch.channels_last):
            ok = one_shape(*s, ceiling, out_format) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
