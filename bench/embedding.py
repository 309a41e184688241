"""Token embedding + positional rows + layer_norm (one kiln kernel reading the table's rows in
place), and argmax over a vocabulary, beside PyTorch (eager and torch.compile) and the copy
ceiling, in one run. Every kernel here is under ~100 us, so kiln and the peers are each timed
replayed in a CUDA graph (bench/run.py's graphed); kiln's plan inside the capture runs without
its index check (a capture cannot wait for the host), which the run before it did.
Usage: python3 bench/embedding.py (with build-device/python or build/python on PYTHONPATH)."""
import sys

import torch  # noqa: E402
from run import copy_ceiling_gbs, graphed, median_us  # noqa: E402

import kiln  # noqa: E402

ENGINE = kiln.Engine()
F = torch.nn.functional


def row(name, kiln_us, nbytes, ceiling, peers, ok):
    gbs = nbytes / kiln_us / 1e3
    cells = [f"{name}: kiln {kiln_us:7.1f} us {gbs:6.0f} GB/s ({gbs / ceiling:.2f} of copy)"]
    cells += [f"{p} {us:7.1f} us ({kiln_us / us:.2f}x)" for p, us in peers.items()]
    cells.append("ok" if ok else "FAIL")
    print(" | ".join(cells), flush=True)
    return ok


def embedding_block(ceiling):
    vocab, dim, batch, seq = 50257, 768, 8, 1024
    g = kiln.Graph()
    w, ids = g.input("w", [vocab, dim], "bf16"), g.input("ids", [batch, seq], "i64")
    pos = g.input("pos", [seq, dim], "bf16")
    gamma, beta = g.input("gamma", [dim], "bf16"), g.input("beta", [dim], "bf16")
    g.output(kiln.layer_norm(kiln.embedding(w, ids) + pos, gamma, beta, eps=1e-5), "y")
    plan = kiln.Plan(g)
    kernels = len(plan.kernels())
    t = dict(w=torch.randn(vocab, dim, device="cuda", dtype=torch.bfloat16),
             ids=torch.randint(0, vocab, (batch, seq), device="cuda"),
             pos=torch.randn(seq, dim, device="cuda", dtype=torch.bfloat16),
             gamma=torch.randn(dim, device="cuda", dtype=torch.bfloat16),
             beta=torch.randn(dim, device="cuda", dtype=torch.bfloat16))
    t["ids"][0, 0], t["ids"][-1, -1] = 0, vocab - 1

    def torch_block(w, ids, pos, gamma, beta):
        return F.layer_norm(F.embedding(ids, w) + pos, (dim,), gamma, beta, 1e-5)

    y = torch.empty(batch, seq, dim, device="cuda", dtype=torch.bfloat16)
    plan.run(ENGINE, out={"y": y}, **t)
    ref = torch_block(*(v.double() if v.is_floating_point() else v for v in t.values()))
    err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, out={"y": y}, **t))[0], inner=10)
    compiled = torch.compile(torch_block)
    peers = {"eager": median_us(graphed(lambda: torch_block(**t))[0], inner=10),
             "torch.compile": median_us(graphed(lambda: compiled(**t))[0], inner=10)}
    nbytes = 2 * batch * seq * dim * 2 + seq * dim * 2 + batch * seq * 8
    return row(f"embedding [{vocab}, {dim}] bf16 x {batch}x{seq} ids + pos + layer_norm "
               f"({kernels} kernel{'s' if kernels > 1 else ''})", kiln_us, nbytes, ceiling, peers,
               err <= 2**-6 and kernels == 1)


def argmax_rows(ceiling):
    rows, vocab = 8192, 50257
    g = kiln.Graph()
    g.output(kiln.argmax(g.input("x", [rows, vocab], "f32")), "i")
    plan = kiln.Plan(g)
    x = torch.randn(rows, vocab, device="cuda")
    x[5, 7] = x[5].max()  # a tie: the first wins
    i = torch.empty(rows, device="cuda", dtype=torch.int64)
    plan.run(ENGINE, x=x, out={"i": i})
    ok = torch.equal(i, torch.argmax(x, -1))
    kiln_us = median_us(graphed(lambda: plan.run(ENGINE, x=x, out={"i": i}))[0], inner=5)
    peers = {"torch.argmax": median_us(graphed(lambda: torch.argmax(x, -1))[0], inner=5)}
    return row(f"argmax [{rows}, {vocab}] f32", kiln_us, rows * vocab * 4 + rows * 8, ceiling,
               peers, ok)


def main():
    ceiling = copy_ceiling_gbs()
    print(f"{torch.cuda.get_device_name()}: copy ceiling {ceiling:.0f} GB/s", flush=True)
    ok = embedding_block(ceiling)
    ok = argmax_rows(ceiling) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
