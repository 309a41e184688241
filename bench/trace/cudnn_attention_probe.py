"""cuDNN's attention kernel on one of the attention bench graphs, for ncu: torch's
scaled_dot_product_attention on the cuDNN backend (bf16, the graph's shape and causal attr),
warmed up, then run once inside an NVTX range "measure", so that
`ncu --nvtx --nvtx-include measure/` profiles that launch alone.
Usage (GPU machine): python3 bench/trace/cudnn_attention_probe.py GRAPH
(`PEER=bench/trace/cudnn_attention_probe.py bench/trace/profile.sh` runs it under ncu beside
kiln's kernel)."""
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def main(path):
    graph = json.load(open(path))
    causal = bool(graph["nodes"][0].get("attrs", {}).get("causal", False))
    shape = graph["inputs"][0]["shape"]
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("measure")
        f()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1])
