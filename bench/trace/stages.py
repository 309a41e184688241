"""The convolution rows at other ring depths, tile widths and splits than the default's
(bench/trace/bm64.patch's KILN_EXP_TUNE="bn split stages bm"; "" the default), each checked
against fp64 and timed graphed beside cuDNN in one process: whether a deeper ring, or wider tiles
with more of K split, beat the default once the loads alone are known to run faster than the
convolution (bench/trace/probes.sh).
Usage (GPU machine): TRACE_DIR=/tmp/kiln-bm64 TRACE_BUILD_ONLY=1 bench/trace/run.sh bm64, then
this in that copy with PYTHONPATH=build/python; `stages.py short` times every row's default and
the 8-stage rings of C1280 and s2 alone, `stages.py fit` wider tiles whose clusters all fit."""
import sys

from conv_configs import run

CFG = {
    0: [],
    1: ["160 2 5 128"],
    2: ["80 2 6 128", "80 2 8 128", "160 4 4 128", "128 4 4 128", "256 4 3 128", "160 2 4 128"],
    3: [],
    4: ["80 2 6 128", "80 2 8 128", "160 2 4 128", "160 4 4 128"],
    5: ["256 1 4 128"],
}

SHORT = {0: [], 1: [], 2: ["80 2 8 128"], 3: [], 4: ["80 2 8 128"], 5: []}

# Wider tiles whose clusters all fit the GPU at once (bench/trace/cluster_occupancy.cu: 30
# clusters of 4 at one block an SM, so 120 blocks), fewer bytes into shared memory than the
# default's. C1280 (default 192 wide split 4, 112 blocks): 256 split 4 (80), 96 split 2
# (112), 192 split 2 (56); s2: 128 split 2 (96 blocks), 80 unsplit (64), 192 split 2 (64);
# 1x1: 192 wide (112).
FIT = {0: [], 1: [], 2: ["256 4 3 128", "96 2 4 128", "192 2 4 128"], 3: [],
       4: ["128 2 4 128", "80 1 4 128", "192 2 4 128"], 5: ["192 1 4 128"]}

if __name__ == "__main__":
    run({"short": SHORT, "fit": FIT}.get(sys.argv[1] if sys.argv[1:] else "", CFG))
