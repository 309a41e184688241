"""bench/conv.py's rows at 64-row tiles of one consumer warpgroup against the default
(bench/trace/bm64.patch's KILN_EXP_TUNE="bn split stages bm"; "" the default), each checked
against fp64 and timed graphed beside cuDNN in this one process.
Usage (GPU machine): bench/trace/run.sh bm64 (the patch applied to a copy, built, then this)."""
import os
import sys
sys.path.insert(0, "bench")
import conv  # noqa: E402

CFG = {
    0: ["", "160 1 4 64", "80 1 4 64"],
    1: ["", "128 2 4 64", "128 1 4 64"],
    2: ["", "128 1 4 64", "80 2 4 64", "128 2 4 64", "64 1 6 64"],
    3: ["", "192 1 4 64", "128 1 4 64"],
    4: ["", "128 1 4 64", "80 1 4 64", "64 1 6 64"],
    5: ["", "160 1 4 64", "128 1 4 64"],
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
