#!/usr/bin/env python3
"""Seed 000's Gaussian field on kiln (build/bin/gaussian_field) beside PyTorch in one device run:
the forward and forward + backward at each bench size (eager by substitution, torch.compile of
it, also with max-autotune, and torch.linalg.solve_triangular once per Gaussian with the points
as its right-hand sides, and per pair, the seed's form, where it fits), and the same Adam
training from the data the app dumps, its final loss against kiln's. Prints the app's JSON lines
and tables. Where the baselines spend their time: bench/gaussian_probe.py."""
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import median_us, run_app  # noqa: E402

LR, ITERATIONS, POINTS = 0.02, 500, 1000


def unpack(P, logdiag):
    """mu [N,3], L [N,3,3] (lower), w [N] from P [N,10]."""
    diag = (lambda v: torch.exp(v)) if logdiag else (lambda v: v)
    z = torch.zeros_like(P[:, 0])
    L = torch.stack([torch.stack([diag(P[:, 3]), z, z], -1),
                     torch.stack([P[:, 4], diag(P[:, 5]), z], -1),
                     torch.stack([P[:, 6], P[:, 7], diag(P[:, 8])], -1)], -2)
    return P[:, :3], L, P[:, 9]


def field(x, mu, L, w):
    """Forward substitution, elementwise over [B, N]."""
    d = x[:, None, :] - mu[None]
    z0 = d[..., 0] / L[:, 0, 0]
    z1 = (d[..., 1] - L[:, 1, 0] * z0) / L[:, 1, 1]
    z2 = (d[..., 2] - L[:, 2, 0] * z0 - L[:, 2, 1] * z1) / L[:, 2, 2]
    return (w * torch.exp(-0.5 * (z0 * z0 + z1 * z1 + z2 * z2))).sum(-1)


def field_solve(x, mu, L, w):
    """The seed's form: torch.linalg.solve_triangular per pair."""
    d = (x[:, None, :] - mu[None])[..., None]
    z = torch.linalg.solve_triangular(L[None].expand(x.shape[0], -1, -1, -1), d, upper=False)
    return (w * torch.exp(-0.5 * (z * z).sum((-1, -2)))).sum(-1)


def field_solve_cols(x, mu, L, w):
    """torch.linalg.solve_triangular once per Gaussian, the points as its B right-hand sides."""
    d = x.t()[None] - mu[..., None]
    z = torch.linalg.solve_triangular(L, d, upper=False)
    return (w[:, None] * torch.exp(-0.5 * (z * z).sum(1))).sum(0)


def inputs(N, B, x_grad=True):
    """Random points x, Gaussians mu, L, w (all requiring grad; x as `x_grad` says) and gf."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.rand(B, 3, device="cuda", generator=g) * 4 - 2).requires_grad_(x_grad)
    P = torch.rand(N, 10, device="cuda", generator=g)
    P[:, [3, 5, 8]] += 0.5
    mu, L, w = (t.detach().clone().requires_grad_() for t in unpack(P, False))
    gf = torch.rand(B, device="cuda", generator=g) * 2 - 1
    return x, mu, L, w, gf


def both(fn, x, mu, L, w, gf):
    """A call of fn's forward and backward: the gradients of whatever requires grad."""
    wrt = [t for t in (x, mu, L, w) if t.requires_grad]
    return lambda: torch.autograd.grad(fn(x, mu, L, w), wrt, gf)


def timings(N, B):
    """Median µs of each PyTorch form, forward (no grad) and forward + backward (all four
    gradients). torch.compile is static per size (dynamic=False): in one process a second size
    otherwise recompiles with dynamic shapes, and those kernels ran forward + backward 1.6x slower
    at N=10000 B=20000 (bench/NOTES.md)."""
    a = inputs(N, B)
    out = {}
    forms = [("eager", field), ("compile", torch.compile(field, dynamic=False)),
             ("autotune", torch.compile(field, dynamic=False, mode="max-autotune-no-cudagraphs")),
             ("solve_columns", field_solve_cols)]
    if N * B <= 10 ** 6:
        forms.append(("solve_triangular", field_solve))
    for name, fn in forms:
        with torch.no_grad():
            out[f"{name}_forward_us"] = median_us(lambda: fn(*a[:4]), reps=10)
        out[f"{name}_both_us"] = median_us(both(fn, *a), reps=10)
    return out


def train(N, dump):
    read = lambda k, shape: torch.from_numpy(
        np.fromfile(os.path.join(dump, f"train{N}_{k}.f32"), dtype=np.float32).reshape(shape)).cuda()
    x, t, P = read("x", (POINTS, 3)), read("t", (POINTS,)), read("P", (N, 10)).requires_grad_()
    opt = torch.optim.Adam([P], lr=LR, eps=1e-8)
    losses = []
    for _ in range(ITERATIONS):
        opt.zero_grad()
        loss = torch.mean((field(x, *unpack(P, True)) - t) ** 2)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    dump = tempfile.mkdtemp()
    rows, status = run_app(__doc__, "gaussian_field", "--dump", dump)
    print("| N, B | kiln fwd µs | eager | compile | compile (max-autotune) | solve_triangular "
          "per Gaussian | per pair | kiln / best compile | kiln fwd+bwd | eager | compile "
          "| compile (max-autotune) | solve_triangular per Gaussian | per pair "
          "| kiln / best compile | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- | --- |")
    for r in rows:
        if "forward_us" not in r:
            continue
        t = timings(r["N"], r["B"])
        st = lambda k: f"{t[k]:.1f}" if k in t else "-"
        best = lambda k: min(t[f"compile_{k}_us"], t[f"autotune_{k}_us"])
        forms = ("eager", "compile", "autotune", "solve_columns", "solve_triangular")
        cells = lambda k: " | ".join(st(f"{f}_{k}_us") for f in forms)
        print(f"| {r['N']}, {r['B']} | {r['forward_us']:.1f} | {cells('forward')} "
              f"| {r['forward_us'] / best('forward'):.2f} | {r['forward_backward_us']:.1f} "
              f"| {cells('both')} | {r['forward_backward_us'] / best('both'):.2f} | {r['check']} |")
    print("| N | kiln loss first | kiln loss last | fell | PyTorch loss first | PyTorch loss last "
          "| kiln / PyTorch last |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "train_N" not in r:
            continue
        losses = train(r["train_N"], dump)
        print(f"| {r['train_N']} | {r['loss_first']:.4e} | {r['loss_last']:.4e} | {r['fell']:.1f} "
              f"| {losses[0]:.4e} | {losses[-1]:.4e} | {r['loss_last'] / losses[-1]:.4f} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
