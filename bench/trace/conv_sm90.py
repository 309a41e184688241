"""Where a wgmma convolution's K steps go, ring use by ring use (`bench/trace/run.sh conv_sm90
[c1280 s2 ...]` runs it on a build with bench/trace/conv_sm90.patch applied).

The patched kernel (gemm_sm90.cuh's block, conv_sm90.cuh's producer) records clock64 at each
ring use (the first 191) of blocks 0-7 (blockIdx.z 0):
  [0] the producer before it waits for the stage to be free, [1] the stage's copies issued,
  [2] consumer group 1 before it waits for the stage's bytes, [3] after (the stage landed),
  [4] after its wgmma::wait<1> (the use before retired), [5] consumer group 2 after its wait;
and per block its start and end, then copies them over the output's first bytes. Per block it
prints cycles a use, how long the producer waited for a free stage (the consumers are the
bound), how long group 1 waited for bytes (TMA is), the issue-to-landing latency, and the start
to the first landing (fill) and the last retire to the end (epilogue)."""
import statistics
import subprocess
import sys

import torch

import kiln

E = kiln.Engine()
ROWS = {"c320": (2, 320, 320, 64, 3, 1), "c640": (2, 640, 640, 32, 3, 1),
        "c1280": (2, 1280, 1280, 16, 3, 1), "n8": (8, 256, 256, 64, 3, 1),
        "s2": (2, 320, 320, 64, 3, 2), "1x1": (2, 640, 1280, 32, 1, 1)}
BLOCKS, USES = 8, 191


def records(n, c, k, hw, r, stride):
    g = kiln.Graph()
    x = kiln.permute(g.input("x", [n, hw, hw, c], "f16"), dims=[0, 3, 1, 2])
    w = kiln.permute(g.input("w", [k, r, r, c], "f16"), dims=[0, 3, 1, 2])
    g.output(kiln.conv2d(x, w, stride=[stride], padding=[r // 2]), "y")
    plan = kiln.Plan(g)
    cl = torch.channels_last
    xt = torch.randn(n, c, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=cl)
    wt = torch.randn(k, c, r, r, device="cuda", dtype=torch.float16).to(memory_format=cl)
    p = (hw + 2 * (r // 2) - r) // stride + 1
    y = torch.empty(n, k, p, p, device="cuda", dtype=torch.float16).to(memory_format=cl)
    for _ in range(5):  # the last launch's records: caches and clocks warm
        plan.run(E, out={"y": y}, x=xt.permute(0, 2, 3, 1), w=wt.permute(0, 2, 3, 1))
    torch.cuda.synchronize()
    raw = y.permute(0, 2, 3, 1).reshape(-1).view(torch.int64)[: BLOCKS * (USES + 1) * 6]
    return plan.kernels()[0]["name"], raw.cpu().reshape(BLOCKS, USES + 1, 6).tolist()


def block_summary(rec, blk):
    start, end = rec[USES][0], rec[USES][1]
    used = [u for u in range(USES) if rec[u][3] != 0]
    if not used or start == 0:
        return
    n = len(used)
    steady = used[4:] or used
    free_wait = sum(rec[u][1] - rec[u][0] for u in steady)
    byte_wait = sum(rec[u][3] - rec[u][2] for u in steady)
    waited = [rec[u][3] - rec[u][1] for u in steady if rec[u][3] - rec[u][2] > 64]
    span = rec[used[-1]][3] - rec[steady[0]][3]
    per = span / max(len(steady) - 1, 1)
    print(f"block {blk}: {n} uses, {end - start} cycles; fill {rec[used[0]][3] - start}, "
          f"{per:.0f} a use in steady state, epilogue {end - rec[used[-1]][4]}")
    print(f"  steady ({len(steady)} uses, {span} cycles): producer waits for a free stage "
          f"{free_wait} ({100 * free_wait / max(span, 1):.0f} %), group 1 waits for bytes "
          f"{byte_wait} ({100 * byte_wait / max(span, 1):.0f} %); issue to landing where it "
          f"waited: median {statistics.median(waited) if waited else 0:.0f} over {len(waited)}; "
          f"landing to the use before retired: median "
          f"{statistics.median(rec[u][4] - rec[u][3] for u in steady):.0f}; group 2 lands "
          f"{statistics.median(rec[u][5] - rec[u][3] for u in steady):.0f} after group 1")


def main():
    names = sys.argv[1:] or ["c1280", "s2", "n8"]
    if len(names) > 1:
        # A process a row: the patched kernel's records live in a device array that a later
        # launch overwrites only as far as its own uses, so a row with fewer uses than the one
        # before it read the earlier row's records as its own.
        for name in names:
            subprocess.run([sys.executable, __file__, name], check=False)
        return
    kernel, raw = records(*ROWS[names[0]])
    print(f"{names[0]}: {kernel} (clock64 cycles)", flush=True)
    for b in range(BLOCKS):
        block_summary(raw[b], b)


if __name__ == "__main__":
    main()
