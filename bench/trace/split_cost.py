"""The shapes whose default tile changes with bench/trace/split_cost.patch (a split in 4 costing 12
steps more in wgmma_fit_tunables' estimate, not 4): convolutions beside cuDNN, products alone,
graphed. N1 C640 32x32 ran 27.0 us at main's 128x256 split 4 and 24.3 at 128x80 split 2 (H200,
session 58); the others are unmeasured either way.
Usage (GPU machine): `bench/trace/run.sh split_cost patched` (the patched copy), and in this tree
`PYTHONPATH=build-device/python:bench python3 bench/trace/split_cost.py main` in the same call."""
import sys
import torch
sys.path.insert(0, __file__.rsplit('/', 2)[0])  # bench/, for run and conv
from run import graphed, median_us
import kiln
from conv import measure
E = kiln.Engine()
tag = sys.argv[1] if sys.argv[1:] else "main"
for (n, c, k, hw) in [(1, 640, 640, 32), (4, 320, 320, 16), (8, 512, 256, 16), (2, 640, 1280, 16)]:
    m = measure(n, c, k, hw, 3, 1)
    print(f"{tag} conv N{n} C{c}->{k} {hw}: kiln {m['kiln_us']:.1f} cuDNN {m['cudnn_us']:.1f} "
          f"{m['kernels'][0]['name']}", flush=True)
for (M, K, N, lin) in [(128, 4096, 4096, True), (128, 4096, 4096, False), (2048, 4096, 256, True)]:
    g = kiln.Graph()
    a = g.input("a", [M, K], "f16"); b = g.input("b", [N, K] if lin else [K, N], "f16")
    g.output(kiln.linear(a, b) if lin else kiln.matmul(a, b), "c")
    plan = kiln.Plan(g)
    at = torch.randn(M, K, device="cuda", dtype=torch.float16)
    bt = torch.randn(*([N, K] if lin else [K, N]), device="cuda", dtype=torch.float16) / K ** 0.5
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    us = median_us(graphed(lambda: plan.run(E, out={"c": c}, a=at, b=bt))[0], inner=10)
    print(f"{tag} gemm {M}x{K}x{N} {'kk' if lin else 'kt'}: kiln {us:.1f} {plan.kernels()[0]['name']}",
          flush=True)
