"""A convolution with what surrounds it in a U-Net (issue 52), f16 channels_last, in one run:
conv3x3 + batch norm + SiLU at N8 C256 64x64, conv3x3 + time embedding + SiLU at N2 C320 64x64
(the [N, K] embedding broadcast over H x W), and GroupNorm(32) + SiLU then conv3x3 at N2 C320
64x64. Each block is one kiln plan (its kernels printed), checked against PyTorch in fp64 first,
then replayed in a CUDA graph beside kiln's convolution alone and PyTorch's block (eager, and the
GroupNorm + SiLU through torch.compile, cuDNN with cudnn.benchmark) replayed the same way.
Also (by name): silu, the convolution and a SiLU; affine, a per-channel scale and shift given
(batch norm's folded) and a SiLU.
Usage: python3 bench/conv_block.py [BLOCK...] (with build-device/python or build/python on
PYTHONPATH); blocks bn, temb, gn by default."""
import sys

import torch  # noqa: E402
from run import graphed, median_us  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()
F = torch.nn.functional
CL = torch.channels_last


def conv_graph(n, c, k, hw, block):
    """kiln's graph of `block` ("conv", "bn", "temb" or "gn") around a 3x3 padding-1 conv."""
    g = kiln.Graph()
    x = kiln.permute(g.input("x", [n, hw, hw, c], "f16"), dims=[0, 3, 1, 2])
    w = kiln.permute(g.input("w", [k, 3, 3, c], "f16"), dims=[0, 3, 1, 2])
    if block == "gn":
        x = kiln.silu(kiln.group_norm(x, g.input("gamma", [c], "f16"), g.input("beta", [c], "f16"),
                                      groups=32, eps=1e-5))
    y = kiln.conv2d(x, w, padding=[1])
    if block == "bn":
        stats = [g.input(s, [k], "f32") for s in ("mean", "var", "bn_w", "bn_b")]
        y = kiln.silu(kiln.batch_norm(y, *stats, eps=1e-5))
    if block == "temb":
        y = kiln.silu(y + kiln.reshape(g.input("temb", [n, k], "f16"), shape=[n, k, 1, 1]))
    if block == "silu":
        y = kiln.silu(y)
    if block == "affine":  # batch norm's scale and shift given per channel
        scale, shift = (kiln.reshape(g.input(s, [k], "f32"), shape=[k, 1, 1])
                        for s in ("bn_w", "bn_b"))
        y = kiln.cast(kiln.silu(y * scale + shift), dtype="f16")
    g.output(y, "y")
    return g


def tensors(n, c, k, hw):
    def r(*s, dtype=torch.float16, scale=1.0):
        return torch.randn(*s, device="cuda", dtype=dtype) * scale
    t = dict(x=r(n, c, hw, hw).to(memory_format=CL),
             w=(r(k, c, 3, 3) / (9 * c) ** 0.5).to(memory_format=CL),
             mean=r(k, dtype=torch.float32, scale=0.1), var=r(k, dtype=torch.float32).abs() + 0.5,
             bn_w=r(k, dtype=torch.float32), bn_b=r(k, dtype=torch.float32),
             temb=r(n, k), gamma=r(c), beta=r(c))
    return t


def torch_block(t, block, gn_silu=None):
    """PyTorch's block on the tensors `t` (in their dtype: f16, or float64 for the reference)."""
    x = t["x"]
    if block == "gn":
        x = gn_silu(x, t["gamma"], t["beta"]) if gn_silu else F.silu(
            F.group_norm(x, 32, t["gamma"], t["beta"], eps=1e-5))
    y = F.conv2d(x, t["w"], padding=1)
    if block == "bn":
        y = F.silu(F.batch_norm(y, t["mean"].to(y.dtype), t["var"].to(y.dtype),
                                t["bn_w"].to(y.dtype), t["bn_b"].to(y.dtype), False, 0.0, 1e-5))
    if block == "temb":
        y = F.silu(y + t["temb"][:, :, None, None])
    if block == "silu":
        y = F.silu(y)
    if block == "affine":
        y = F.silu(y * t["bn_w"].to(y.dtype)[:, None, None] + t["bn_b"].to(y.dtype)[:, None, None])
    return y


def one_block(n, c, k, hw, block):
    t = tensors(n, c, k, hw)
    plan = kiln.Plan(conv_graph(n, c, k, hw, block))
    alone = kiln.Plan(conv_graph(n, c, k, hw, "conv"))
    names = {"bn": ["mean", "var", "bn_w", "bn_b"], "temb": ["temb"], "gn": ["gamma", "beta"],
             "affine": ["bn_w", "bn_b"]}
    inputs = dict(x=t["x"].permute(0, 2, 3, 1), w=t["w"].permute(0, 2, 3, 1),
                  **{s: t[s] for s in names.get(block, [])})
    y = torch.empty(n, k, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=CL)
    plan.run(ENGINE, out={"y": y}, **inputs)
    ref = torch_block({s: v.double() for s, v in t.items()}, block)
    err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, out={"y": y}, **inputs))[0], inner=10)
    alone_in = dict(x=inputs["x"], w=inputs["w"])
    alone_us = median_us(graphed(lambda: alone.run(ENGINE, out={"y": y}, **alone_in))[0], inner=10)
    torch.backends.cudnn.benchmark = True
    eager_us = median_us(graphed(lambda: torch_block(t, block))[0], inner=10)
    line = (f"{block:>4} N{n} C{c}->{k} {hw}x{hw}: kiln {kiln_us:6.1f} us "
            f"({len(plan.kernels())} kernel(s): {', '.join(x['name'] for x in plan.kernels())}) | "
            f"kiln conv alone {alone_us:6.1f} us (block/conv {kiln_us / alone_us:.2f}x) | "
            f"torch eager {eager_us:6.1f} us (kiln/torch {kiln_us / eager_us:.2f}x)")
    if block == "gn":
        compiled = torch.compile(lambda x, g_, b_: F.silu(F.group_norm(x, 32, g_, b_, eps=1e-5)))
        best_us = median_us(graphed(lambda: torch_block(t, block, compiled))[0], inner=10)
        line += (f" | torch.compile GN+SiLU + cuDNN {best_us:6.1f} us "
                 f"(kiln/that {kiln_us / best_us:.2f}x)")
    ok = err <= 2e-2
    print(f"{line} | error {err:.1e} {'ok' if ok else 'FAIL'}", flush=True)
    return ok


def main():
    print(f"{torch.cuda.get_device_name()}: conv blocks f16 channels_last, CUDA graphs", flush=True)
    ok = True
    blocks = sys.argv[1:] or ["bn", "temb", "gn"]
    for args in [(8, 256, 256, 64, "bn"), (2, 320, 320, 64, "temb"), (2, 320, 320, 64, "gn"),
                 (8, 256, 256, 64, "silu"), (8, 256, 256, 64, "affine")]:
        if args[-1] not in blocks:
            continue
        ok = one_block(*args) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
