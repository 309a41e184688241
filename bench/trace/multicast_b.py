"""bench/conv.py's rows at several choices of the convolution's tiles, split and B multicast
(bench/trace/multicast_b.patch's KILN_EXP_TUNE="bn split multicast stages"; "" the default), each
checked against fp64 and timed graphed beside cuDNN in this one process.
Usage (GPU machine): bench/trace/run.sh multicast_b (the patch applied to a copy, built, then
this)."""
from conv_configs import run

CFG = {
    0: ["", "160 1 2 4", "160 1 4 4", "80 1 2 4"],
    1: ["", "160 2 2 4", "160 2 4 4"],
    2: ["", "96 2 4 4", "128 2 4 4", "160 2 4 4", "80 2 2 4"],
    3: ["", "256 1 2 4", "256 1 4 4", "128 1 2 4"],
    4: ["", "128 2 4 4", "160 2 4 4", "80 2 2 4", "160 2 2 4"],
    5: ["", "160 1 2 4", "160 1 4 4"],
}

if __name__ == "__main__":
    run(CFG)
