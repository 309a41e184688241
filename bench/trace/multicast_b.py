"""bench/conv.py's rows at several choices of the convolution's tiles, split and B multicast
(bench/trace/multicast_b.patch's KILN_EXP_TUNE="bn split multicast stages"; "" the default), each
checked against fp64 and timed graphed beside cuDNN in this one process.
Usage (GPU machine): bench/trace/run.sh multicast_b (the patch applied to a copy, built, then
this)."""
import os
import sys
sys.path.insert(0, "bench")
import conv  # noqa: E402

CFG = {
    0: ["", "160 1 2 4", "160 1 4 4", "80 1 2 4"],
    1: ["", "160 2 2 4", "160 2 4 4"],
    2: ["", "96 2 4 4", "128 2 4 4", "160 2 4 4", "80 2 2 4"],
    3: ["", "256 1 2 4", "256 1 4 4", "128 1 2 4"],
    4: ["", "128 2 4 4", "160 2 4 4", "80 2 2 4", "160 2 2 4"],
    5: ["", "160 1 2 4", "160 1 4 4"],
}
for i, r in enumerate(conv.ROWS):
    for cfg in CFG[i] + [""]:
        if cfg:
            os.environ["KILN_EXP_TUNE"] = cfg
        else:
            os.environ.pop("KILN_EXP_TUNE", None)
        m = conv.measure(*r)
        print(f"row {i} {r} [{cfg or 'default'}]: kiln {m['kiln_us']:6.1f}"
              f" cuDNN {m['cudnn_us']:6.1f} speed {m['cudnn_us'] / m['kiln_us']:.2f}x err {m['err']:.1e}"
              f" {'ok' if m['err'] <= 2e-2 else 'FAIL'} {m['kernels'][0]['name']}", flush=True)
