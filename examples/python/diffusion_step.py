"""Seed 004's diffusion step from PyTorch: x0 = (x - sqrt(1 - abar) eps) / sqrt(abar);
out = clamp(w x0 + (1 - w) prev, -1, 1), f16, one fused kiln kernel run on torch tensors, beside
torch eager and torch.compile, checked against an fp64 evaluation."""
import sys

from common import ENGINE, kiln, report, time_us, torch


def step_plan(shape):
    g = kiln.Graph()
    x, eps, prev = (g.input(n, shape, "f16") for n in ("x", "eps", "prev"))
    a, b, w = (g.input(n, [1], "f32") for n in ("a", "b", "w"))  # sqrt(1-abar), 1/sqrt(abar)
    x0 = (x - a * eps) * b
    g.output(kiln.cast(kiln.clamp(w * x0 + (1.0 - w) * prev, min=-1.0, max=1.0), dtype="f16"), "out")
    return kiln.Plan(g)


def torch_step(x, eps, prev, a, b, w):
    x0 = (x - a * eps) * b
    return torch.clamp(w * x0 + (1 - w) * prev, -1, 1).half()


def main():
    shape = [16, 4, 128, 128]
    plan = step_plan(shape)
    x, eps, prev = (torch.randn(shape, device="cuda").clamp(-3, 3).half() for _ in range(3))
    abar, w = 0.7, 0.9
    scalars = {k: torch.tensor([v], device="cuda") for k, v in
               {"a": (1 - abar) ** 0.5, "b": abar ** -0.5, "w": w}.items()}
    run = lambda: plan.run(ENGINE, x=x, eps=eps, prev=prev, **scalars)["out"]  # noqa: E731
    out = run()
    ref = torch_step(x.double(), eps.double(), prev.double(), *(scalars[k].double()
                                                                 for k in ("a", "b", "w")))
    error = (out.double() - ref.double()).abs().max().item()
    eager = lambda: torch_step(x, eps, prev, *scalars.values())  # noqa: E731
    compiled_fn = torch.compile(torch_step)
    compiled = lambda: compiled_fn(x, eps, prev, *scalars.values())  # noqa: E731
    ok = report(f"diffusion step {tuple(shape)} f16", time_us(run),
                {"eager": time_us(eager), "torch.compile": time_us(compiled)}, error, 1e-3)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
