#!/usr/bin/env python3
"""Where the Gaussian field's PyTorch baselines spend their time (issue 24 asks our forms to be
within 15 % of its anchors, else to say why). For each form of the forward + backward at the two
bench sizes: the median over events, the host time a call (wall time over back-to-back calls
with no synchronization), the GPU time a call and its kernels (torch.profiler), so a slow form
shows whether it is slow on the GPU or on the host, and in which kernels. Every compile is static
(dynamic=False): a second size would otherwise recompile with dynamic shapes.
usage: bench/gaussian_probe.py [NxB ...]  (env FORMS="name;name": only those forms)
       bench/gaussian_probe.py recompile  (a second size's dynamic recompile against static)"""
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gaussian_field import both, field, field_solve, field_solve_cols, inputs  # noqa: E402
from run import median_us  # noqa: E402


def field_inv(x, mu, L, w):
    """L's inverse first (N small solves), then z = L^-1 d by multiplies only."""
    A = torch.linalg.solve_triangular(L, torch.eye(3, device=L.device).expand_as(L), upper=False)
    d = x[:, None, :] - mu[None]
    z0 = A[:, 0, 0] * d[..., 0]
    z1 = A[:, 1, 0] * d[..., 0] + A[:, 1, 1] * d[..., 1]
    z2 = A[:, 2, 0] * d[..., 0] + A[:, 2, 1] * d[..., 1] + A[:, 2, 2] * d[..., 2]
    return (w * torch.exp(-0.5 * (z0 * z0 + z1 * z1 + z2 * z2))).sum(-1)


def field_and_grads(x, mu, L, w, gf):
    """f and its gradients given gf = dloss/df, derived by hand: with z = L^-1 (x - mu) and
    u = L^-T z, a pair's term e = w exp(-|z|^2 / 2) has de/dx = -e u, de/dL_ij = e u_i z_j
    (i >= j), de/dw = e / w. One pass over [B, N] for f and dx, one for the rest."""
    d = x[:, None, :] - mu[None]
    z0 = d[..., 0] / L[:, 0, 0]
    z1 = (d[..., 1] - L[:, 1, 0] * z0) / L[:, 1, 1]
    z2 = (d[..., 2] - L[:, 2, 0] * z0 - L[:, 2, 1] * z1) / L[:, 2, 2]
    ex = torch.exp(-0.5 * (z0 * z0 + z1 * z1 + z2 * z2))
    g = gf[:, None] * ex
    u2 = z2 / L[:, 2, 2]
    u1 = (z1 - L[:, 2, 1] * u2) / L[:, 1, 1]
    u0 = (z0 - L[:, 1, 0] * u1 - L[:, 2, 0] * u2) / L[:, 0, 0]
    gw = g * w
    dx = -torch.stack([(gw * u).sum(1) for u in (u0, u1, u2)], -1)
    dmu = torch.stack([(gw * u).sum(0) for u in (u0, u1, u2)], -1)
    zero = torch.zeros_like(w)
    cell = lambda u, v: (gw * u * v).sum(0)
    dL = torch.stack([torch.stack([cell(u0, z0), zero, zero], -1),
                      torch.stack([cell(u1, z0), cell(u1, z1), zero], -1),
                      torch.stack([cell(u2, z0), cell(u2, z1), cell(u2, z2)], -1)], -2)
    return (w * ex).sum(-1), dx, dmu, dL, g.sum(0)


def vjp(fn):
    """The joint forward + backward as one compiled graph (torch.func.vjp under torch.compile)."""
    return torch.compile(lambda x, mu, L, w, gf: torch.func.vjp(fn, x, mu, L, w)[1](gf),
                         dynamic=False)


def report(name, call, reps=10):
    call()
    torch.cuda.synchronize()
    us = median_us(call, reps=reps)
    n = 5
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    host = (time.perf_counter() - t0) * 1e6 / n
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            call()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = kernels.setdefault(e.name, [0, 0.0])
            k[0] += 1
            k[1] += e.device_time
    gpu = sum(v[1] for v in kernels.values()) / n
    launches = sum(v[0] for v in kernels.values()) // n
    print(f"| {name} | {us:.1f} | {host:.1f} | {gpu:.1f} | {launches} |")
    for kname, (count, t) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:8]:
        print(f"|   {kname[:90]} | | | {t / n:.1f} | {count // n} |", flush=True)


def check_by_hand(a):
    """The gradients by hand against autograd's, in fp64, on a slice of the inputs."""
    x, mu, L, w, gf = (t.detach()[:200].double().requires_grad_() for t in a)
    want = (field(x, mu, L, w).detach(),
            *torch.autograd.grad(field(x, mu, L, w), [x, mu, L, w], gf))
    got = field_and_grads(x, mu, L, w, gf)
    err = max(float((g.detach() - e).abs().max() / e.abs().max().clamp_min(1e-30))
              for g, e in zip(got, want))
    print(f"gradients by hand against autograd (fp64, 200 x 200): worst relative error {err:.2e}")
    assert err < 1e-10, err


def recompile_check():
    """torch.compile's forward + backward at N=10000 B=20000 after a call at N=1000 B=500 in the
    same process (default settings: the second size recompiles with dynamic shapes), against a
    static compile of that size alone."""
    for label, kw in (("after another size (dynamic recompile)", {}),
                      ("static", {"dynamic": False})):
        torch._dynamo.reset()
        fn = torch.compile(field, **kw)
        if not kw:
            both(fn, *inputs(1000, 500))()
        us = median_us(both(fn, *inputs(10000, 20000)), reps=10)
        print(f"compile forward + backward at N=10000 B=20000, {label}: {us:.1f} µs", flush=True)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    if sys.argv[1:] == ["recompile"]:
        return recompile_check()
    sizes = sys.argv[1:] or ["1000x500", "10000x20000"]
    for N, B in (tuple(int(v) for v in s.split("x")) for s in sizes):
        print(f"\n### N={N} B={B}\n")
        print("| form | median µs | host µs a call | GPU µs a call | kernels a call |")
        print("| --- | --- | --- | --- | --- |")
        a = inputs(N, B)
        check_by_hand(a)
        only = os.environ.get("FORMS")
        static = lambda fn, **kw: torch.compile(fn, dynamic=False, **kw)
        whole = lambda f: lambda: f(*a)  # a form that takes gf and returns the gradients itself
        forms = [("eager", both(field, *a)),
                 ("compile", both(static(field), *a)),
                 ("compile (L^-1)", both(static(field_inv), *a)),
                 ("compile max-autotune-no-cudagraphs",
                  both(static(field, mode="max-autotune-no-cudagraphs"), *a)),
                 ("compile, joint vjp", whole(vjp(field))),
                 ("compile (L^-1), joint vjp", whole(vjp(field_inv))),
                 ("compile, gradients by hand", whole(static(field_and_grads))),
                 ("solve_triangular, columns", both(field_solve_cols, *a)),
                 ("compile solve_triangular, columns", both(static(field_solve_cols), *a))]
        if N * B <= 10 ** 6:
            forms.append(("solve_triangular, per pair", both(field_solve, *a)))
        forms.append(("compile, no dx", both(static(field), *inputs(N, B, x_grad=False))))
        for name, call in forms:
            if only and name not in only.split(";"):
                continue
            try:
                report(name, call)
            except Exception as e:  # a form that does not compile is a row, not the end
                print(f"| {name} | failed: {type(e).__name__}: {str(e)[:200]} | | | |", flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
