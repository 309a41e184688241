#!/usr/bin/env bash
# On the GPU machine: the attention family's GPU cases, each test case in a process of its own
# side by side (NVRTC compiles dominate; one process takes ~400 s, eight ~100 s on 16 cores),
# while compute-sanitizer racecheck, synccheck and memcheck run each tests/sanitize_attention
# graph (SANITIZE="*wgmma*" narrows them to a glob). Builds kiln_tests and the CLI in
# build-device first (an existing build, e.g. scripts/ab-revisions.sh's, is reused). Logs go to
# $OUT/attention-check.tgz; prints each case's summary and each sanitizer's.
# Usage: scripts/attention-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
start=$SECONDS
logs=$(mktemp -d)
extra=(); [ -f /usr/include/xxhash.h ] || extra+=("-DKILN_XXHASH_INCLUDE_DIR=$PWD/.deps/include")
{ cmake -S . -B build-device -G Ninja "${extra[@]}" -DPython3_EXECUTABLE="$(command -v python3)" &&
  cmake --build build-device --target kiln_tests kiln_cli; } >"$logs/build.log" 2>&1 ||
  { tail -n 30 "$logs/build.log"; echo "attention-check: build failed"; exit 1; }
echo "attention-check: built in $((SECONDS - start)) s"
bin=build-device/bin
status=0
cases=("gpu: attention against*" "gpu: attention reuses*" "gpu: attention with a prologue*"
       "gpu: attention with an epilogue*" "gpu: attention with folded*" "gpu: attention's decode*"
       "gpu: attention's epilogue behind*" "gpu: attention's sm_90a*")
pids=()
for i in "${!cases[@]}"; do
  (timeout 420 $bin/kiln_tests -tc="${cases[$i]}" >"$logs/case$i.log" 2>&1
   rc=$?; echo "case '${cases[$i]}': exit $rc, $(grep '^\[doctest\] test cases' "$logs/case$i.log" |
     tr -s ' ')"; exit $rc) &
  pids+=($!)
done
for g in tests/sanitize_attention/${SANITIZE:-*}.json; do
  for tool in racecheck synccheck memcheck; do
    log="$logs/$tool-$(basename "$g" .json).log"
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $bin/kiln bench --reps 1 "$g" >"$log" 2>&1
    rc=$?
    summary=$(grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$log" | sed 's/=* *//')
    echo "$tool $(basename "$g"): exit $rc, $summary"
    # racecheck reports hazards with exit 0: its summary decides.
    [[ $rc -eq 0 && "$summary" != *" 0 hazards"* && $tool == racecheck ]] && rc=1
    [ $rc -eq 0 ] || status=1
  done
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
grep -hE "ERROR:|FAILED" "$logs"/case*.log | head -n 20
tar -czf "$OUT/attention-check.tgz" -C "$logs" .
echo "attention-check: $([ $status -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $status
