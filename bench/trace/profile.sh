#!/usr/bin/env bash
# On the GPU machine: where a kernel's time goes. For each GRAPH (a JSON graph with exact shapes:
# bench/conv/*.json, bench/gemm/*.json), ncu's full set of sections on LAUNCHES launches of
# the kernels `kiln bench` runs whose names match KERNEL, exported as NAME.details.csv and
# NAME.sass.csv (the per-instruction source page: stall samples, instructions executed), then
# bench/trace/ncu_summary.py on them (the products and the epilogue of a wgmma kernel apart).
# The reports, exports and summary go into $OUT/profile.tgz: the device tool brings back at
# most 8 files. Builds the CLI in build-device first (as scripts/device-test.sh does).
# Usage: bench/trace/profile.sh GRAPH...   Env: KERNEL (ncu --kernel-name regex, default .),
#   LAUNCHES (default 1), OUT (default device-out)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: bench/trace/profile.sh GRAPH..."; exit 2; }
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
work=$(mktemp -d)
extra=(); [ -f /usr/include/xxhash.h ] || extra+=("-DKILN_XXHASH_INCLUDE_DIR=$PWD/.deps/include")
{ cmake -S . -B build-device -G Ninja "${extra[@]}" && cmake --build build-device --target kiln_cli; } \
  >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; exit 1; }
kiln=build-device/bin/kiln
status=0
names=()
for g in "$@"; do
  name=$(basename "$g" .json)
  timeout 300 ncu --set full --import-source no --kernel-name "regex:${KERNEL:-.}" \
    --launch-count "${LAUNCHES:-1}" -f -o "$work/$name" "$kiln" bench --reps 1 "$g" \
    >"$work/$name.ncu.log" 2>&1 || { status=1; tail -n 5 "$work/$name.ncu.log"; continue; }
  ncu --import "$work/$name.ncu-rep" --page details --csv >"$work/$name.details.csv" 2>&1
  ncu --import "$work/$name.ncu-rep" --page source --print-source sass --csv \
    >"$work/$name.sass.csv" 2>&1
  names+=("$name")
done
[ ${#names[@]} -gt 0 ] && python3 bench/trace/ncu_summary.py "$work" "${names[@]}" | tee "$work/summary.txt"
tar -czf "$OUT/profile.tgz" -C "$work" . && rm -rf "$work"
exit $status
