"""Where the sm_90a attention kernel's time goes, item by item (`bench/trace/run.sh attention_sm90
[s512 ...]` runs it on a build with bench/trace/attention_sm90.patch applied).

The patched kernel records clock64 at these points of the first 64 items of blocks 0-3 and copies
the records over the output's first 4 x 9216 bytes at the end:
  producer thread: [0] the item drawn, [1] its Q tile free again (Q issued), [2] its first K and V
                   issued, [3] its last K and V issued, [5] its tiles of keys;
  each consumer group's first thread: [0] before it waits for Q, [1] Q landed, [2] the item's last
                   P V done, [3] its output stored.
Cycles are converted at GHZ (the SM clock under load, approximate)."""
import statistics
import sys

import torch

import kiln

E = kiln.Engine()
GHZ = 1.98
SHAPES = {  # issue 50's table
    "s512": (32, 16, 512, 128), "s1024": (16, 16, 1024, 128), "s4096": (4, 16, 4096, 128),
    "d64": (4, 32, 4096, 64), "s16384": (1, 16, 16384, 128),
}


def us(cycles):
    return cycles / GHZ / 1e3


def records(b, h, s, d, causal):
    g = kiln.Graph()
    q, k, v = (g.input(n, [b, h, s, d], "bf16") for n in "qkv")
    g.output(kiln.attention(q, k, v, causal=causal), "o")
    plan = kiln.Plan(g)
    x = [torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    o = torch.empty(b, h, s, d, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):  # the last launch's records: caches and clocks warm
        plan.run(E, out={"o": o}, q=x[0], k=x[1], v=x[2])
    torch.cuda.synchronize()
    raw = o.view(-1).view(torch.int64)[: 4 * 3 * 64 * 6].cpu().reshape(4, 3, 64, 6).tolist()
    return plan.kernels()[0]["name"], raw


def block_summary(raw, blk):
    prod, groups = raw[blk][0], raw[blk][1:]
    # Items whose output group 0 stored (the producer also records the end it hands on).
    n = sum(1 for r in groups[0] if r[3] != 0)
    if n == 0:
        return
    t0 = min(prod[0][0], groups[0][0][0], groups[1][0][0])
    end = max(g[n - 1][3] for g in groups)
    print(f"block {blk}: {n} items, {us(end - t0):.1f} us from its first record to its last")
    for c, r in enumerate(groups):
        tiles = sum(prod[i][5] for i in range(n))
        wait = sum(r[i][1] - r[i][0] for i in range(n))
        main = sum(r[i][2] - r[i][1] for i in range(n) if prod[i][5] > 0)
        store = sum(r[i][3] - r[i][2] for i in range(n) if prod[i][5] > 0)
        between = sum(r[i + 1][0] - r[i][3] for i in range(n - 1))
        print(f"  group {c}: waiting for Q {us(wait):.1f} us, tiles {us(main):.1f} us "
              f"({us(main) / max(tiles, 1):.2f} a tile), store {us(store):.1f} us, "
              f"between items {us(between):.1f} us")
    free = [us(prod[i][1] - prod[i][0]) for i in range(n)]
    ahead = [us(groups[0][i][0] - prod[i][1]) for i in range(n)]
    print(f"  producer: waits for a free Q tile {statistics.median(free):.2f} us (median); "
          f"issues Q {statistics.median(ahead):.2f} us before group 0 asks for it")
    r = groups[0]
    print("  group 0's first items [tiles: Q wait / tiles / store, us]: " + " ".join(
        f"[{prod[i][5]}: {us(r[i][1] - r[i][0]):.2f} / {us(r[i][2] - r[i][1]):.2f} / "
        f"{us(r[i][3] - r[i][2]):.2f}]" for i in range(min(n, 6))))


def main(names):
    for name in names or ["s512", "s1024", "s4096"]:
        for causal in (False, True):
            kernel, raw = records(*SHAPES[name], causal)
            print(f"== {name}{' causal' if causal else ''}: {kernel}")
            for blk in range(4):
                block_summary(raw, blk)


if __name__ == "__main__":
    main(sys.argv[1:])
