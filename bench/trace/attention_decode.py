"""Where the attention decode kernel's time goes, warp by warp (`bench/trace/run.sh
attention_decode [b8 b64 b1]` runs it on a build with bench/trace/attention_decode.patch applied).

The patched kernel records clock64 for each warp of blocks 0-3: [0] its start, [1] its first tile
of keys landed, [2] its last tile done, [3] the merge of the partial results done, [4] its tiles;
once the launch's blocks are done it copies the records over the output's first 4 x 320 bytes.
Cycles are converted at GHZ (the SM clock under load, approximate)."""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # bench/
import kiln  # noqa: E402
from attention_decode import D, ENGINE as E, HKV, HQ, decode_graph  # noqa: E402

GHZ = 1.98
SHAPES = {"b8": (8, 4096), "b64": (64, 2048), "b1": (1, 32768)}  # issue 49's decode rows


def us(cycles):
    return cycles / GHZ / 1e3


def records(b, s):
    plan = kiln.Plan(decode_graph(b, s))
    x = [torch.randn(b, h, n, D, device="cuda", dtype=torch.bfloat16)
         for h, n in ((HQ, 1), (HKV, s), (HKV, s))]
    o = torch.empty(b, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):  # the last launch's records: caches and clocks warm
        plan.run(E, out={"o": o}, q=x[0], k=x[1], v=x[2])
    torch.cuda.synchronize()
    raw = o.view(-1).view(torch.int64)[: 4 * 8 * 5].cpu().reshape(4, 8, 5).tolist()
    return plan.kernels()[0]["name"], raw


def main(names):
    for name in names or list(SHAPES):
        kernel, raw = records(*SHAPES[name])
        print(f"== decode {name}: {kernel}")
        for blk in range(4):
            warps = [w for w in raw[blk] if w[0] != 0]
            if not warps:
                continue
            t0 = min(w[0] for w in warps)
            fill = [us(w[1] - w[0]) for w in warps if w[4] > 0]
            loop = [us(w[2] - w[1]) / max(w[4] - 1, 1) for w in warps if w[4] > 1]
            last = max(w[2] for w in warps)
            merge = us(max(w[3] for w in warps) - last)
            print(f"block {blk}: {len(warps)} warps, {[w[4] for w in warps]} tiles; "
                  f"first tile after {min(fill, default=0):.2f}-{max(fill, default=0):.2f} us; "
                  f"{min(loop, default=0):.2f}-{max(loop, default=0):.2f} us a tile after it; "
                  f"last tile done at {us(last - t0):.1f} us; merge {merge:.1f} us")


if __name__ == "__main__":
    main(sys.argv[1:])
