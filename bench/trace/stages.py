"""The convolution rows at other ring depths, tile widths and splits than the default's
(bench/trace/bm64.patch's KILN_EXP_TUNE="bn split stages bm"; "" the default), each checked
against fp64 and timed graphed beside cuDNN in one process: whether a deeper ring, or wider tiles
with more of K split, beat the default once the loads alone are known to run faster than the
convolution (bench/trace/probes.sh).
Usage (GPU machine): TRACE_DIR=/tmp/kiln-bm64 TRACE_BUILD_ONLY=1 bench/trace/run.sh bm64, then
this in that copy with PYTHONPATH=build/python; `stages.py short` times every row's default and
the 8-stage rings of C1280 and s2 alone."""
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

if __name__ == "__main__":
    run(SHORT if sys.argv[1:] == ["short"] else CFG)
