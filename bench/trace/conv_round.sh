#!/usr/bin/env bash
# On the GPU machine, one device call: where a wgmma convolution's K steps wait
# (bench/trace/conv_sm90.patch on C1280, s2 and N8), then the staged 64-row tiles
# (bench/trace/bm64.patch): its two GPU cases and bench/trace/bm64.py beside cuDNN.
# Each patch is built in its own copy of this tree (bench/trace/run.sh). About 5 minutes.
# Usage: bench/trace/conv_round.sh   Env: OUT (logs; default device-out)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
start=$SECONDS
TRACE_DIR=/tmp/kiln-trace bash bench/trace/run.sh conv_sm90 c1280 s2 n8 2>&1 | tee "$OUT/trace.log"
echo "trace done at $((SECONDS - start)) s"
TRACE_DIR=/tmp/kiln-bm64 TRACE_BUILD_ONLY=1 bash bench/trace/run.sh bm64 || exit 1
(cd /tmp/kiln-bm64 && cmake --build build --target kiln_tests >"$OUT/bm64-tests-build.log" 2>&1) ||
  { tail -n 30 "$OUT/bm64-tests-build.log"; exit 1; }
for c in "gpu: the wgmma path on 64-row tiles*" "gpu: conv2d's wgmma path on 64-row tiles*"; do
  timeout 120 /tmp/kiln-bm64/build/bin/kiln_tests -tc="$c" >"$OUT/bm64-case.log" 2>&1
  echo "$c: rc $? $(grep -E '^\[doctest\] (test cases|assertions)' "$OUT/bm64-case.log" | tr '\n' ' ')"
  grep -E "ERROR|CRASH" -A6 "$OUT/bm64-case.log" | head -20
done
(cd /tmp/kiln-bm64 && PYTHONPATH=build/python timeout 200 python3 bench/trace/bm64.py) 2>&1 |
  tee "$OUT/bm64.log"
echo "done at $((SECONDS - start)) s"
