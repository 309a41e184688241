#!/usr/bin/env bash
# On the GPU machine, after device-test.sh built build-device: GPU-fuzz seeds A:B in chunks of
# FUZZ_CHUNK (default 25) seeds, one kiln_fuzz process per chunk, $(nproc) at a time (work
# stealing: a slow graph holds up one chunk, not a fixed slice), until FUZZ_TIMEOUT seconds.
# Writes $OUT/fuzz.log (every chunk's report) and $OUT/fuzz-failures.tgz (failing graphs and
# their inputs, if any); prints the ranges done, so a later call can take up the rest.
# FUZZ_WITH=op,op checks only the seeds whose graph has one of those ops (kiln_fuzz --with).
# Usage: scripts/fuzz-range.sh A:B
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
range=${1:?usage: fuzz-range.sh A:B}
first=${range%:*}; last=${range#*:}; chunk=${FUZZ_CHUNK:-25}
if [ ! -x build-device/bin/kiln_fuzz ]; then
  extra=(); [ -f /usr/include/xxhash.h ] || extra+=("-DKILN_XXHASH_INCLUDE_DIR=$PWD/.deps/include")
  { cmake -S . -B build-device -G Ninja "${extra[@]}" && cmake --build build-device; } >"$OUT/build.log" 2>&1 ||
    { tail -n 40 "$OUT/build.log"; exit 1; }
fi
with=(); [ -n "${FUZZ_WITH:-}" ] && with=(--with "$FUZZ_WITH")
work=$(mktemp -d); mkdir -p "$work/logs" "$work/failures"
start=$SECONDS
seq "$first" "$chunk" $((last - 1)) | timeout -k 10 "${FUZZ_TIMEOUT:-500}" xargs -P "$(nproc)" -I{} bash -c \
  "b=\$(( {} + $chunk < $last ? {} + $chunk : $last )); build-device/bin/kiln_fuzz --seeds {}:\$b -j 1 ${with[*]} --regressions $work/failures > $work/logs/{}.log 2>&1"
echo "fuzz-range: $((SECONDS - start)) s"
cat "$work"/logs/*.log > "$OUT/fuzz.log"
# A chunk is done when its process reported all of its seeds.
done_seeds=0; failures=0; missing=()
for s in $(seq "$first" "$chunk" $((last - 1))); do
  b=$(( s + chunk < last ? s + chunk : last ))
  line=$(grep -hE "^fuzz: [0-9]+ graphs, [0-9]+ failures" "$work/logs/$s.log" 2>/dev/null)
  if [ -n "$line" ] && [ "$(echo "$line" | awk '{print $2}')" -eq $((b - s)) ]; then
    done_seeds=$((done_seeds + b - s)); failures=$((failures + $(echo "$line" | awk '{print $4}')))
  else
    missing+=("$s:$b")
  fi
done
grep -hE "FAILED|shrunk" "$OUT/fuzz.log" | head -n 20
echo "fuzz-range: $done_seeds of $((last - first)) seeds checked in $range, $failures failures"
[ ${#with[@]} -eq 0 ] || echo "fuzz-range: of them, $(grep -hE "^fuzz: [0-9]+ of the" "$OUT/fuzz.log" | awk '{s += $2} END {print s + 0}') graphs with ${FUZZ_WITH} checked against the fp64 reference; the others skipped"
[ ${#missing[@]} -eq 0 ] || echo "fuzz-range: ${#missing[@]} chunks not done, from ${missing[0]} on: ${missing[*]}" | cut -c1-3000
if [ -n "$(ls -A "$work/failures")" ]; then tar -czf "$OUT/fuzz-failures.tgz" -C "$work" failures; fi
[ "$failures" -eq 0 ] && [ ${#missing[@]} -eq 0 ]
