"""A pre-norm transformer block's residual and layer_norm from PyTorch: h = x + attn;
y = layer_norm(h) * w + b, both outputs of one fused kiln kernel, run on torch tensors and as a
torch op inside a torch.compile'd function, beside torch eager and torch.compile."""
import sys

from common import ENGINE, kiln, report, time_us, torch

import kiln.torch  # noqa: E402  (after common: it finds the module)


def block_plan(rows, cols):
    g = kiln.Graph()
    x, attn = g.input("x", [rows, cols], "bf16"), g.input("attn", [rows, cols], "bf16")
    w, b = g.input("w", [cols], "bf16"), g.input("b", [cols], "bf16")
    h = x + attn
    g.output(h, "h")
    g.output(kiln.layer_norm(h, w, b, eps=1e-5), "y")
    return kiln.Plan(g)


def torch_block(x, attn, w, b):
    h = x + attn
    return h, torch.nn.functional.layer_norm(h, (h.shape[-1],), w, b, 1e-5)


def main():
    rows, cols = 8192, 4096
    plan = block_plan(rows, cols)
    x, attn = (torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    w, b = (torch.randn(cols, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    got = plan.run(ENGINE, x=x, attn=attn, w=w, b=b)
    h_ref, y_ref = torch_block(*(t.double() for t in (x, attn, w, b)))

    def y_error(y):  # largest error relative to 1 + |y|, against fp64
        return ((y.double() - y_ref).abs() / (1 + y_ref.abs())).max().item()

    torch_error = y_error(torch_block(x, attn, w, b)[1])  # torch's own bf16 block
    h_error = ((got["h"].double() - h_ref).abs() / h_ref.abs().clamp(min=1e-30)).max().item()
    assert h_error <= 2**-8, f"h: relative error {h_error:.2e} beyond bf16's rounding"
    error = y_error(got["y"])
    op = kiln.torch.op(plan, "example_block")
    in_compiled = torch.compile(lambda *a: op(*a)[1] * 2.0)
    error = max(error, (in_compiled(x, attn, w, b).double() - 2 * got["y"].double()).abs().max().item())
    print(f"torch's bf16 block: max error {torch_error:.2e}; kiln is held to twice that")
    compiled_fn = torch.compile(torch_block)
    ok = report(f"residual + layer_norm [{rows}, {cols}] bf16",
                time_us(lambda: plan.run(ENGINE, x=x, attn=attn, w=w, b=b)),
                {"eager": time_us(lambda: torch_block(x, attn, w, b)),
                 "torch.compile": time_us(lambda: compiled_fn(x, attn, w, b))}, error,
                2 * torch_error)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
