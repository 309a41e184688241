"""Attention prefill with per-batch KV lengths (kv_lens) beside the same call without them: what
a call's key bounds cost on the mma path, whose tiles they narrow (bench/NOTES.md). B4 H16 Sq
Skv 4096 bf16, D 96 and 128, full and causal (top-left and bottom-right); kv_lens all 4096 (the
same work as without) and mixed (4096, 3072, 2048, 1024). Each plan is checked against torch in
fp64 on each batch's last 64 query rows, then replayed in a CUDA graph (median of 20).
Usage: python3 bench/trace/attention_lens.py (with a build's python/ and bench/ on PYTHONPATH;
scripts/ab-revisions.sh PY= runs it on two revisions)."""
import sys

import torch
from run import graphed, median_us

import kiln

ENGINE = kiln.Engine()
B, H, S = 4, 16, 4096
F = torch.nn.functional


def plan_of(d, lens, attrs):
    g = kiln.Graph()
    q = g.input("q", [B, H, S, d], "bf16")
    k = g.input("k", [B, H, S, d], "bf16")
    v = g.input("v", [B, H, S, d], "bf16")
    args = [q, k, v]
    if lens:
        args.append(g.input("lens", [B], "i64"))
    g.output(kiln.attention(*args, **attrs), "o")
    return kiln.Plan(g)


def reference(q, k, v, lens, attrs):
    """torch in fp64 of each batch's last 64 query rows (its keys cut to its length)."""
    out = []
    for b in range(B):
        n = int(lens[b]) if lens is not None else S
        qb = q[b:b + 1, :, S - 64:].double()
        kb, vb = (t[b:b + 1, :, :n].double() for t in (k, v))
        mask = None
        if attrs.get("causal"):
            rows = torch.arange(S - 64, S, device="cuda")[:, None]
            cols = torch.arange(n, device="cuda")[None, :]
            shift = n - S if attrs.get("causal_align") == "bottom_right" else 0
            mask = cols <= rows + shift
        r = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask)
        out.append(torch.nan_to_num(r))
    return torch.cat(out)


def one(d, lens_values, attrs):
    q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    lens = None if lens_values is None else torch.tensor(lens_values, device="cuda")
    plan = plan_of(d, lens is not None, attrs)
    o = torch.empty(B, H, S, d, device="cuda", dtype=torch.bfloat16)
    feeds = dict(q=q, k=k, v=v) if lens is None else dict(q=q, k=k, v=v, lens=lens)
    plan.run(ENGINE, out={"o": o}, **feeds)
    ref = reference(q, k, v, lens, attrs)
    err = ((o[:, :, S - 64:].double() - ref).abs() / (1 + ref.abs())).max().item()
    us = median_us(graphed(lambda: plan.run(ENGINE, out={"o": o}, **feeds))[0])
    tag = "no lens" if lens is None else "lens " + "/".join(str(x) for x in lens_values)
    print(f"D{d} {attrs or 'full'} {tag}: {us:7.1f} us ({plan.kernels()[0]['name']}) "
          f"error {err:.1e} {'ok' if err <= 2e-2 else 'FAIL'}", flush=True)
    return err <= 2e-2


def main():
    print(f"{torch.cuda.get_device_name()}: attention prefill with kv_lens, B{B} H{H} S{S} bf16")
    ok = True
    for d in (96, 128):
        for attrs in ({}, {"causal": True}, {"causal": True, "causal_align": "bottom_right"}):
            for lens in (None, [S] * B, [4096, 3072, 2048, 1024]):
                ok = one(d, lens, attrs) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
