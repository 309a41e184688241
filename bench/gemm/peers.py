"""cuBLAS (torch.matmul) and torch.compile times for the GEMM bench graphs, CUDA events, median.
linear+gelu graphs (inputs x, w, b): gelu(linear); QKV (x, w): one linear over the
concatenated weight, whose q, k, v are views of it."""
import json
import sys

import torch


def timed(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000)
    return sorted(times)[len(times) // 2]


def main(paths):
    dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    torch.backends.cuda.matmul.allow_tf32 = False
    for path in paths:
        g = json.load(open(path))
        ins = {i["name"]: torch.randn(i["shape"], device="cuda", dtype=dt[i["dtype"]]) for i in g["inputs"]}
        if "x" in ins and "b" in ins:
            f = lambda: torch.nn.functional.gelu(torch.nn.functional.linear(ins["x"], ins["w"], ins["b"]))
            M, K = ins["x"].shape
            N = ins["w"].shape[0]
        elif "x" in ins:  # QKV: one product over the concatenated weight; q, k, v are its views
            f = lambda: torch.nn.functional.linear(ins["x"], ins["w"])
            M, K = ins["x"].shape
            N = ins["w"].shape[0]
        else:
            f = lambda: ins["a"] @ ins["b"]
            (M, K), N = ins["a"].shape, ins["b"].shape[1]
        us = timed(f)
        cf = torch.compile(f)
        cus = timed(cf)
        print(json.dumps({"graph": path, "eager_us": us, "compile_us": cus,
                          "eager_tflops": 2 * M * N * K / us / 1e6, "compile_tflops": 2 * M * N * K / cus / 1e6}))


if __name__ == "__main__":
    main(sys.argv[1:])
