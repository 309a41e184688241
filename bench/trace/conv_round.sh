#!/usr/bin/env bash
# On the GPU machine: the staged convolution experiments of bench/trace, each patch built in its
# own copy of this tree (bench/trace/run.sh). Steps (default: trace bm64 l2; each about 1-3 min):
#   trace  where a wgmma convolution's K steps wait (conv_sm90.patch on C1280, s2 and N8);
#   bm64   64-row tiles (bm64.patch): its two GPU cases and bm64.py beside cuDNN;
#   l2     the bm64 copy with l2_256.patch too: bench/conv.py with 128-byte (main's) and 256-byte
#          TMA L2 promotion, alternating, each a process of its own;
#   fit    the bm64 copy's hook: `bench/trace/stages.py fit` (wider tiles whose clusters all fit).
# Usage: bench/trace/conv_round.sh [trace] [bm64] [l2] [fit]   Env: OUT (logs; default device-out)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
steps=" ${*:-trace bm64 l2} "
start=$SECONDS
if [[ "$steps" == *" trace "* ]]; then
  TRACE_DIR=/tmp/kiln-trace bash bench/trace/run.sh conv_sm90 c1280 s2 n8 2>&1 |
    tee "$OUT/trace.log"
  echo "trace done at $((SECONDS - start)) s"
fi
copy=/tmp/kiln-bm64
if [[ "$steps" == *" bm64 "* || "$steps" == *" l2 "* || "$steps" == *" fit "* ]]; then
  TRACE_DIR=$copy TRACE_BUILD_ONLY=1 bash bench/trace/run.sh bm64 || exit 1
fi
if [[ "$steps" == *" bm64 "* ]]; then
  (cd $copy && cmake --build build --target kiln_tests >"$OUT/bm64-tests-build.log" 2>&1) ||
    { tail -n 30 "$OUT/bm64-tests-build.log"; exit 1; }
  for c in "gpu: the wgmma path on 64-row tiles*" "gpu: conv2d's wgmma path on 64-row tiles*"; do
    timeout 120 $copy/build/bin/kiln_tests -tc="$c" >"$OUT/bm64-case.log" 2>&1
    echo "$c: rc $? $(grep -E '^\[doctest\] (test cases|assertions)' "$OUT/bm64-case.log" |
      tr '\n' ' ')"
    grep -E "ERROR|CRASH" -A6 "$OUT/bm64-case.log" | head -20
  done
  (cd $copy && PYTHONPATH=build/python timeout 200 python3 bench/trace/bm64.py) 2>&1 |
    tee "$OUT/bm64.log"
  echo "bm64 done at $((SECONDS - start)) s"
fi
if [[ "$steps" == *" l2 "* ]]; then
  (cd $copy && patch -p1 -s <bench/trace/l2_256.patch && cmake --build build --target _kiln) \
    >"$OUT/l2-build.log" 2>&1 || { tail -n 30 "$OUT/l2-build.log"; exit 1; }
  for l2 in "" 256 "" 256; do
    echo "== TMA L2 promotion ${l2:-128 (main)}"
    (cd $copy && env ${l2:+KILN_EXP_L2=$l2} PYTHONPATH=build/python:bench timeout 100 \
      python3 bench/conv.py) 2>&1 | tail -n 6 | tee -a "$OUT/l2.log"
  done
fi
if [[ "$steps" == *" fit "* ]]; then
  (cd $copy && PYTHONPATH=build/python timeout 200 python3 bench/trace/stages.py fit) 2>&1 |
    grep -E "^row [0-9]|Error" | tee "$OUT/fit.log"
fi
echo "done at $((SECONDS - start)) s"
