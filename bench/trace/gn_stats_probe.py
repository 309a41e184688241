"""A probe for issue 48's GroupNorm(32)+SiLU at few, long groups (N2 C320 64x64: 64 groups of
40960 values): how fast two plain kernels can be before kiln builds them. (1) statistics: ~one
block a multiprocessor, each thread a fixed 8 channels of a run of pixels, every load issued
before the first is used, sums of values shifted by the image's first pixel (one pass, plain
sums, no second pass over registers), a block's channel sums into a part, the image's last
block (a ticket) merging the parts in a fixed order into per-(n, c) scale and shift; (2) the
map, y = silu(x * scale + shift), 16-byte packs. Both replayed in one CUDA graph beside
torch.compile's GN+SiLU, and each alone; values checked against fp64 first. CuPy compiles and
launches the kernels (gn_stats_probe.cu, NVRTC) on torch's stream.
Usage: PYTHONPATH=bench python3 bench/trace/gn_stats_probe.py [PARTS_PER_IMAGE...]"""
import pathlib
import sys

import cupy as cp
import torch
from run import graphed, median_us

F = torch.nn.functional
SHAPES = [(2, 320, 64, 64), (2, 640, 32, 32), (2, 1280, 16, 16)]

SOURCE = pathlib.Path(__file__).with_suffix(".cu")


def rows_for(c):
    """Pixel rows a block: blocks of ~640 threads, each a fixed 8 channels."""
    cols = c // 8
    return max(1, min(1024 // cols, 640 // cols))


def probe(n, c, h, w, nparts, sms):
    hw = h * w
    rows = rows_for(c)
    mod = cp.RawModule(code=SOURCE.read_text(),
                       options=("-std=c++17", f"-DC={c}", "-DG=32", f"-DROWS={rows}"))
    stats, mapk = mod.get_function("gn_stats"), mod.get_function("gn_map")
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16).to(
        memory_format=torch.channels_last)
    x = x * 0.5 + torch.linspace(-2, 3, c, device="cuda", dtype=torch.float16).view(1, c, 1, 1)
    x = x.contiguous(memory_format=torch.channels_last)
    gamma = torch.randn(c, device="cuda", dtype=torch.float16)
    beta = torch.randn(c, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    parts = torch.empty(n * nparts * c * 2, device="cuda", dtype=torch.float32)
    tickets = torch.zeros(n, device="cuda", dtype=torch.int32)
    scale = torch.empty(n * c, device="cuda", dtype=torch.float32)
    shift = torch.empty(n * c, device="cuda", dtype=torch.float32)
    packs = x.numel() // 8
    map_blocks = min((packs + 255) // 256, sms * 8)
    args_s = (cp.asarray(x.permute(0, 2, 3, 1)), cp.asarray(gamma), cp.asarray(beta),
              cp.asarray(parts), cp.asarray(tickets), cp.asarray(scale), cp.asarray(shift),
              cp.int32(hw), cp.float32(1e-5))
    args_m = (cp.asarray(x.permute(0, 2, 3, 1)), cp.asarray(scale), cp.asarray(shift),
              cp.asarray(y.permute(0, 2, 3, 1)), cp.int32(hw), cp.int64(packs))

    def on_torch_stream(f):
        def run():
            with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                f()
        return run

    both = on_torch_stream(lambda: (stats((nparts, n), (rows * (c // 8),), args_s),
                                    mapk((map_blocks,), (256,), args_m)))
    only_stats = on_torch_stream(lambda: stats((nparts, n), (rows * (c // 8),), args_s))
    only_map = on_torch_stream(lambda: mapk((map_blocks,), (256,), args_m))
    both()
    torch.cuda.synchronize()
    ref = F.silu(F.group_norm(x.double(), 32, gamma.double(), beta.double(), 1e-5))
    err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()

    def block(t):
        return F.silu(F.group_norm(t, 32, gamma, beta, 1e-5))

    compiled = torch.compile(block)
    us = {name: median_us(graphed(f)[0], inner=10)
          for name, f in (("stats+map", both), ("stats", only_stats), ("map", only_map))}
    us["torch.compile"] = median_us(graphed(lambda: compiled(x))[0], inner=10)
    cells = [f"N{n} C{c} {h}x{w} parts {nparts} ({rows} rows x {c // 8} packs a block)",
             f"error {err:.1e}"]
    cells += [f"{k} {v:6.2f} us" for k, v in us.items()]
    cells.append(f"ratio {us['stats+map'] / us['torch.compile']:.2f}x")
    print(" | ".join(cells), flush=True)
    return err <= 2**-9


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    choices = [int(a) for a in sys.argv[1:]] or [sms // 2, sms]
    print(f"{torch.cuda.get_device_name()}: GroupNorm(32)+SiLU probe, f16 channels_last",
          flush=True)
    ok = True
    for s in SHAPES:
        for p in choices:
            ok = probe(*s, p, sms) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
