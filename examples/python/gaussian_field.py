"""Seed 000's Gaussian field as a torch.autograd.Function over kiln templates
(examples/gaussian_field/gauss.cuh): f(x_b) = sum_n w_n exp(-|L_n^-1 (x_b - mu_n)|^2 / 2), its
gradients for the points and for every parameter (the whole lower triangle of L), checked
against torch's autograd of an fp64 form, and timed beside that form in f32 (eager and
torch.compile)."""
import sys

from common import ENGINE, REPO, kiln, report, time_us, torch

K = kiln.ParamKind
SOURCE = REPO / "examples" / "gaussian_field" / "gauss.cuh"
FIELD_POINTS = 2  # points a thread of gauss_field owns (its POINTS; field.hpp's kFieldPoints)


def template(name):
    """gauss.cuh's kernel `name`: partial sums over S slices of the other side (as field.cpp)."""
    grad, of_points = name != "gauss_field", name != "gauss_grad_p"
    params = [("x", K.tensor), ("P", K.tensor)] + ([("gf", K.tensor)] if grad else [])
    params += [("part", K.tensor), ("B", K.i32), ("N", K.i32), ("S", K.i32), ("logdiag", K.i32)]
    shape = ["S", "B" if of_points else "N"] + {"gauss_grad_x": ["3"], "gauss_grad_p": ["10"]}.get(
        name, [])
    points = FIELD_POINTS if name == "gauss_field" else 1
    t = kiln.Template.from_file(str(SOURCE))
    t.params(params).tunable("BLOCK", [128, 256, 64])
    t.instance(name + "<{x}, {BLOCK}, {logdiag}" + (f", {points}>" if points > 1 else ">"))
    grid = f"ceilf(B / ({points} * BLOCK))" if of_points else "ceilf(N / BLOCK)"
    t.launch([grid, "S"], ["BLOCK"])
    return t.output("part", "x", shape)


def slices(rows, other):
    """Slices of the other side: enough blocks to fill the GPU, each slice at least 64 long."""
    blocks = (rows + 127) // 128
    return max(1, min((2048 + blocks - 1) // blocks, other // 64))


def plans(B, N):
    """(forward: x, P -> f; backward: x, P, gf -> dx, dP) for B points and N Gaussians."""
    def graph():
        g = kiln.Graph()
        for name in ("gauss_field", "gauss_grad_x", "gauss_grad_p"):
            g.define_template(name, template(name))
        return g, g.input("x", [B, 3], "f32"), g.input("P", [N, 10], "f32")

    g, x, P = graph()
    S = slices((B + FIELD_POINTS - 1) // FIELD_POINTS, N)
    g.output(kiln.sum(kiln._apply("gauss_field", x, P, B, N, S, 0), axis=0), "f")
    forward = kiln.Plan(g)
    g, x, P = graph()
    gf = g.input("gf", [B], "f32")
    for name, out, S in (("gauss_grad_x", "dx", slices(B, N)),
                         ("gauss_grad_p", "dP", slices(N, B))):
        g.output(kiln.sum(kiln._apply(name, x, P, gf, B, N, S, 0), axis=0), out)
    return forward, kiln.Plan(g)


class GaussianField(torch.autograd.Function):
    _plans = {}

    @staticmethod
    def forward(ctx, x, P):
        key = (x.shape[0], P.shape[0])
        if key not in GaussianField._plans:
            GaussianField._plans[key] = plans(*key)
        ctx.plans = GaussianField._plans[key]
        ctx.save_for_backward(x, P)
        return ctx.plans[0].run(ENGINE, x=x, P=P)["f"]

    @staticmethod
    def backward(ctx, gf):
        x, P = ctx.saved_tensors
        got = ctx.plans[1].run(ENGINE, x=x, P=P, gf=gf.contiguous())
        return got["dx"], got["dP"]


def torch_field(x, P):
    """The same field in torch (autograd gives its gradients)."""
    d = x[:, None, :] - P[None, :, :3]
    l00, l10, l11, l20, l21, l22, w = (P[:, i] for i in range(3, 10))
    z0 = d[..., 0] / l00
    z1 = (d[..., 1] - l10 * z0) / l11
    z2 = (d[..., 2] - l20 * z0 - l21 * z1) / l22
    return (w * torch.exp(-0.5 * (z0 * z0 + z1 * z1 + z2 * z2))).sum(1)


def gaussians(N):
    P = torch.randn(N, 10, device="cuda") * 0.3
    P[:, :3] = torch.rand(N, 3, device="cuda") * 4 - 2
    P[:, [3, 5, 8]] = 0.3 + torch.rand(N, 3, device="cuda")  # a positive diagonal
    return P


def check(B, N):
    x, P = torch.rand(B, 3, device="cuda") * 4 - 2, gaussians(N)
    gf = torch.randn(B, device="cuda")
    x1, P1 = x.clone().requires_grad_(), P.clone().requires_grad_()
    f = GaussianField.apply(x1, P1)
    f.backward(gf)
    x2, P2 = x.double().requires_grad_(), P.double().requires_grad_()
    ref = torch_field(x2, P2)
    ref.backward(gf.double())

    def err(a, b):  # normwise, relative
        return ((a.double() - b).norm() / b.norm()).item()

    error = max(err(f, ref), err(x1.grad, x2.grad), err(P1.grad, P2.grad))

    def kiln_step():
        xa, Pa = x.clone().requires_grad_(), P.clone().requires_grad_()
        GaussianField.apply(xa, Pa).backward(gf)

    def torch_step(fn):
        def step():
            xa, Pa = x.clone().requires_grad_(), P.clone().requires_grad_()
            fn(xa, Pa).backward(gf)
        return step

    # Static per size: a second size would recompile with dynamic shapes (bench/NOTES.md).
    compiled = torch.compile(torch_field, dynamic=False)
    return report(f"gaussian field N={N} B={B}, forward + backward", time_us(kiln_step),
                  {"eager": time_us(torch_step(torch_field)),
                   "torch.compile": time_us(torch_step(compiled))}, error, 1e-5)


def main():
    ok = all([check(500, 1000), check(20000, 10000)])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
