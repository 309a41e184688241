"""The loop of bench/trace's convolution-configuration drivers (bm64.py, multicast_b.py): each
of bench/conv.py's rows at the default and at each configuration of cfgs[row] (a staged
patch's KILN_EXP_TUNE string), checked against fp64 and timed graphed beside cuDNN, in one
process (the hook is read at each specialization)."""
import os
import sys

sys.path.insert(0, "bench")
import conv  # noqa: E402


def run(cfgs):
    for i, r in enumerate(conv.ROWS):
        for cfg in cfgs[i] + [""]:
            if cfg:
                os.environ["KILN_EXP_TUNE"] = cfg
            else:
                os.environ.pop("KILN_EXP_TUNE", None)
            m = conv.measure(*r)
            print(f"row {i} {r} [{cfg or 'default'}]: kiln {m['kiln_us']:6.1f}"
                  f" cuDNN {m['cudnn_us']:6.1f} speed {m['cudnn_us'] / m['kiln_us']:.2f}x"
                  f" err {m['err']:.1e} {'ok' if m['err'] <= 2e-2 else 'FAIL'}"
                  f" {m['kernels'][0]['name']}", flush=True)
