"""bench/conv.py's rows at 64-row tiles of one consumer warpgroup against the default
(bench/trace/bm64.patch's KILN_EXP_TUNE="bn split stages bm"; "" the default), each checked
against fp64 and timed graphed beside cuDNN in this one process.
Usage (GPU machine): bench/trace/run.sh bm64 (the patch applied to a copy, built, then this)."""
from conv_configs import run

CFG = {
    0: ["", "160 1 4 64", "80 1 4 64"],
    1: ["", "128 2 4 64", "128 1 4 64"],
    2: ["", "128 1 4 64", "80 2 4 64", "128 2 4 64", "64 1 6 64"],
    3: ["", "192 1 4 64", "128 1 4 64"],
    4: ["", "128 1 4 64", "80 1 4 64", "64 1 6 64"],
    5: ["", "160 1 4 64", "128 1 4 64"],
}

if __name__ == "__main__":
    run(CFG)
