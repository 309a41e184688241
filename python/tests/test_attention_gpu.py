"""kiln's attention on torch tensors, on a GPU: against torch's scaled_dot_product_attention on
the decode and prefill paths, called on tensors at once (with its lse, against torch.logsumexp),
and an attention block (QKV projection, attention, output projection: three kernels) as a torch
op under torch.compile and in a CUDA graph capture. Skipped (visibly) without torch or a GPU."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import kiln  # noqa: E402
from conftest import replayed_on  # noqa: E402

if not (torch.cuda.is_available() and kiln.gpu_available()):
    pytest.skip("no GPU", allow_module_level=True)


def attention_block_plan(b, s, h, d):
    """QKV projection, causal attention, output projection: three kernels, q, k and v read as
    windows of the projection, the attention result laid out for the output projection."""
    e = h * d
    g = kiln.Graph()
    qkv = kiln.linear(g.input("x", [b, s, e], "bf16"), g.input("wqkv", [3 * e, e], "bf16"))
    heads = [kiln.permute(kiln.reshape(kiln.slice(qkv, axis=2, start=i * e, stop=(i + 1) * e),
                                       shape=[b, s, h, d]), dims=[0, 2, 1, 3]) for i in range(3)]
    a = kiln.attention(*heads, causal=True)
    m = kiln.reshape(kiln.permute(a, dims=[0, 2, 1, 3]), shape=[b, s, e])
    g.output(kiln.linear(m, g.input("wo", [e, e], "bf16")), "y")
    return kiln.Plan(g)


def attention_block_ref(x, wqkv, wo, h):
    b, s, e = x.shape
    q, k, v = (x.double() @ wqkv.double().T).view(b, s, 3, h, e // h).permute(2, 0, 3, 1, 4)
    a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return a.permute(0, 2, 1, 3).reshape(b, s, e) @ wo.double().T


def attention_block_args(b=2, s=77, h=4, d=64):
    e = h * d
    return [torch.randn(b, s, e, device="cuda", dtype=torch.bfloat16),
            torch.randn(3 * e, e, device="cuda", dtype=torch.bfloat16) / e ** 0.5,
            torch.randn(e, e, device="cuda", dtype=torch.bfloat16) / e ** 0.5]


def test_attention_on_torch_tensors_matches_sdpa_in_both_paths(engine):
    F = torch.nn.functional
    for sq, skv, hq, hkv, causal in ((1, 3000, 8, 2, False), (5, 700, 4, 4, True),
                                     (300, 300, 4, 1, True)):
        g = kiln.Graph()
        q = g.input("q", [2, hq, sq, 64], "bf16")
        k = g.input("k", [2, hkv, skv, 64], "bf16")
        v = g.input("v", [2, hkv, skv, 64], "bf16")
        g.output(kiln.attention(q, k, v, causal=causal, causal_align="bottom_right"), "o")
        t = [torch.randn(2, n, s_, 64, device="cuda", dtype=torch.bfloat16)
             for n, s_ in ((hq, sq), (hkv, skv), (hkv, skv))]
        out = kiln.Plan(g).run(engine, q=t[0], k=t[1], v=t[2])["o"]
        # bottom-right causal: torch's is_causal is top-left, so a mask stands in for it
        keep = torch.ones(sq, skv, dtype=torch.bool, device="cuda").tril(skv - sq)
        ref = F.scaled_dot_product_attention(*(x.double() for x in t),
                                             attn_mask=keep if causal else None,
                                             enable_gqa=True)
        torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)


def test_kiln_attention_called_on_torch_tensors_runs_at_once():
    F = torch.nn.functional
    qkv = torch.randn(2, 100, 3, 8, 64, device="cuda", dtype=torch.bfloat16)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)  # [B, H, S, D] views of the projection, read in place
    out = kiln.attention(q, k, v, causal=True)
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)
    plans = len(kiln.eager._plans)
    again = kiln.attention(q, k, v, causal=True)  # the same signature: no new plan
    assert len(kiln.eager._plans) == plans
    torch.testing.assert_close(again, out)
    x = torch.randn(64, 1000, device="cuda")
    torch.testing.assert_close(kiln.softmax(x), torch.softmax(x, -1), atol=1e-6, rtol=1e-5)


def test_attention_with_lse_on_tensors_matches_torch_logsumexp():
    for sq, skv, hq, hkv in ((1, 3000, 8, 2), (300, 500, 4, 1)):
        q = torch.randn(2, hq, sq, 64, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(2, hkv, skv, 64, device="cuda", dtype=torch.bfloat16) for _ in "kv")
        out, lse = kiln.attention_with_lse(q, k, v, causal=True, causal_align="bottom_right")
        assert lse.dtype == torch.float32 and list(lse.shape) == [2, hq, sq]
        kd = k.double().repeat_interleave(hq // hkv, dim=1)
        s = q.double() @ kd.transpose(-1, -2) / 8.0
        s = s.masked_fill(~torch.ones(sq, skv, dtype=torch.bool, device="cuda").tril(skv - sq),
                          float("-inf"))
        torch.testing.assert_close(lse.double(), torch.logsumexp(s, -1), atol=1e-4, rtol=1e-5)
        torch.testing.assert_close(out, kiln.attention(q, k, v, causal=True,
                                                       causal_align="bottom_right"))


def test_an_attention_block_as_a_torch_op_under_compile_and_in_a_cuda_graph():
    import kiln.torch

    plan = attention_block_plan(2, 77, 4, 64)
    assert len(plan.kernels()) == 3
    op = kiln.torch.op(plan, "test_attention_block")
    args = attention_block_args()
    eager = op(*args)
    torch.testing.assert_close(eager.double(), attention_block_ref(*args, 4), atol=3e-2, rtol=3e-2)
    compiled = torch.compile(lambda x, w1, w2: op(x, w1, w2) * 2, fullgraph=True)
    torch.testing.assert_close(compiled(*args), eager * 2)
    fresh = attention_block_args()
    y = replayed_on(op, args, fresh)
    torch.testing.assert_close(y.double(), attention_block_ref(*fresh, 4), atol=3e-2, rtol=3e-2)
