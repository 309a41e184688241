#!/usr/bin/env bash
# On the GPU machine: where a kernel's time goes. For each GRAPH (a JSON graph with exact shapes:
# bench/conv/*.json, bench/gemm/*.json, bench/attention/*.json), ncu on LAUNCHES launches of the
# kernels `kiln bench` runs whose names match KERNEL, exported as NAME.details.csv and
# NAME.sass.csv (the per-instruction source page: stall samples, instructions executed), then
# bench/trace/ncu_summary.py on them (the products and the epilogue of a wgmma kernel apart; the
# whole kernel's stall reasons and instruction mix with WHOLE=1). With PEER=PROBE (a Python
# script taking the graph, running the peer's launch once inside an NVTX range "measure":
# bench/trace/cudnn_attention_probe.py), the peer's kernel is profiled and summarized the same
# way beside kiln's, as peer_NAME. Where ncu knows the tensor pipe's metric, it is added (the
# tensor cores' busy share). The reports, exports and summary go into $OUT/profile.tgz: the
# device tool brings back at most 8 files. Builds the CLI in build-device first (as
# scripts/device-test.sh does).
# Usage: bench/trace/profile.sh GRAPH...   Env: KERNEL (ncu --kernel-name regex, default .),
#   LAUNCHES (default 1), SECTIONS (ncu's section options, default --set full), PEER, WHOLE,
#   OUT (default device-out)
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
read -r -a sections <<<"${SECTIONS:---set full}"
metrics=()
tensor=sm__pipe_tensor_cycles_active  # wgmma and mma.sync alike
ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}' | grep -qx "$tensor" &&
  metrics=(--metrics "$tensor.avg.pct_of_peak_sustained_active")
status=0
names=()
# profile NAME CMD...: ncu's report of CMD's selected launches, exported for the summary.
profile() {
  local name=$1; shift
  timeout 300 ncu "${sections[@]}" "${metrics[@]}" --import-source no -f -o "$work/$name" "$@" \
    >"$work/$name.ncu.log" 2>&1 || { status=1; tail -n 5 "$work/$name.ncu.log"; return; }
  ncu --import "$work/$name.ncu-rep" --page details --csv >"$work/$name.details.csv" 2>&1
  ncu --import "$work/$name.ncu-rep" --page source --print-source sass --csv \
    >"$work/$name.sass.csv" 2>&1
  names+=("$name")
}
for g in "$@"; do
  name=$(basename "$g" .json)
  profile "$name" --kernel-name "regex:${KERNEL:-.}" --launch-count "${LAUNCHES:-1}" \
    "$kiln" bench --reps 1 "$g"
  [ -n "${PEER:-}" ] && profile "peer_$name" --nvtx --nvtx-include measure/ --launch-count 1 \
    python3 "$PEER" "$g"
done
whole=(); [ -n "${WHOLE:-}" ] && whole=(--whole)
[ ${#names[@]} -gt 0 ] && python3 bench/trace/ncu_summary.py "${whole[@]}" "$work" "${names[@]}" |
  tee "$work/summary.txt"
tar -czf "$OUT/profile.tgz" -C "$work" . && rm -rf "$work"
exit $status
