"""torch's scaled_dot_product_attention on the attention bench graphs: the flash (FA2) backend and
cuDNN, each replayed in a CUDA graph, CUDA events, median of 20; TFLOP/s = 4*B*H*Sq*Skv*D, halved
when causal. kiln's own time comes from `kiln bench` of the same graph in the same device call
(its correctness from the "gpu: attention" tests)."""
import json
import pathlib
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # bench/
from run import graphed, median_us  # noqa: E402


def main(paths):
    for path in paths:
        g = json.load(open(path))
        node = g["nodes"][0]
        causal = bool(node.get("attrs", {}).get("causal", False))
        shape = g["inputs"][0]["shape"]
        B, H, S, D = shape
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        row = {"graph": path}
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    us = median_us(graphed(f)[0])
                row[name + "_us"] = round(us, 1)
                row[name + "_tflops"] = round(flops / us / 1e6, 1)
            except Exception as e:  # a backend this build lacks
                row[name] = f"unavailable: {e}"[:120]
        print(json.dumps(row))


if __name__ == "__main__":
    main(sys.argv[1:])
