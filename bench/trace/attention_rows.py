"""Attention prefill through the Python module, checked and timed in one run: most of issue
50's table (bench/attention/*.json's shapes, bf16) and two odd calls. Each plan's output is
checked against torch in fp64 on the first and the last 64 query rows of every (batch, head),
then the plan is replayed in a CUDA graph beside cuDNN's SDPA replayed the same way (median of
20; TFLOP/s = 4*B*H*S*S*D, halved when causal). Exits 1 if any row is off.
Usage: python3 bench/trace/attention_rows.py [WORD...] (with a build's python/ and bench/ on
PYTHONPATH; scripts/ab-revisions.sh PY= runs it on two revisions). WORDs keep the rows whose tag
("B4 H16 S4096 D128 causal") holds each of them, as words ("S4096 full")."""
import sys

import torch
from run import graphed, median_us
from torch.nn.attention import SDPBackend, sdpa_kernel

import kiln

ENGINE = kiln.Engine()
F = torch.nn.functional
# B, H, S (= Sq = Skv), D, causal
ROWS = [(32, 16, 512, 128, False), (32, 16, 512, 128, True), (16, 16, 1024, 128, False),
        (4, 16, 4096, 128, False), (4, 16, 4096, 128, True), (4, 32, 4096, 64, False),
        (3, 4, 333, 128, True), (2, 6, 1000, 80, False)]


def plan_of(shape, causal):
    g = kiln.Graph()
    q, k, v = (g.input(name, list(shape), "bf16") for name in "qkv")
    g.output(kiln.attention(q, k, v, causal=causal), "o")
    return kiln.Plan(g)


def error(o, q, k, v, causal):
    """The largest |o - ref| / (1 + |ref|) over the first and the last 64 query rows."""
    s = q.shape[2]
    worst = 0.0
    for r0 in sorted({0, max(s - 64, 0)}):
        rows = torch.arange(r0, min(r0 + 64, s), device="cuda")
        mask = (torch.arange(s, device="cuda")[None, :] <= rows[:, None]) if causal else None
        ref = F.scaled_dot_product_attention(q[:, :, rows].double(), k.double(), v.double(),
                                             attn_mask=mask)
        err = ((o[:, :, rows].double() - ref).abs() / (1 + ref.abs())).max().item()
        worst = max(worst, err)
    return worst


def tag(b, h, s, d, causal):
    return f"B{b} H{h} S{s} D{d} {'causal' if causal else 'full'}"


def one(b, h, s, d, causal):
    shape = (b, h, s, d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.full(shape, float("nan"), device="cuda", dtype=torch.bfloat16)
    plan = plan_of(shape, causal)
    plan.run(ENGINE, out={"o": o}, q=q, k=k, v=v)
    err = error(o, q, k, v, causal)
    us = median_us(graphed(lambda: plan.run(ENGINE, out={"o": o}, q=q, k=k, v=v))[0])
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        peer = median_us(graphed(lambda: F.scaled_dot_product_attention(q, k, v,
                                                                        is_causal=causal))[0])
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    ok = err <= 2e-2
    print(f"{tag(b, h, s, d, causal)}: kiln {us:8.1f} us "
          f"{flops / us / 1e6:5.0f} TFLOP/s | cuDNN {peer:8.1f} us | kiln/cuDNN speed "
          f"{peer / us:.2f}x | error {err:.1e} {'ok' if ok else 'FAIL'} | "
          f"{plan.kernels()[0]['name']}", flush=True)
    return ok


def main():
    print(f"{torch.cuda.get_device_name()}: attention prefill bf16, CUDA graphs")
    ok = True
    for row in ROWS:
        if all(w in tag(*row).split() for w in sys.argv[1:]):
            ok = one(*row) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
