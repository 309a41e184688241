#!/usr/bin/env bash
# On the GPU machine: two revisions of kiln side by side in one device call. Builds the CLI from
# this tree (build-device) and from BASE (a tar of a revision's tree, made where git is: `git
# archive REV > .device/base.tar`, carried with the call; this tree's .deps serve it too), both
# builds at once; then `kiln bench` of each GRAPH, base then new, twice, printing each
# kernel-alone time and Plan::run / Plan::replay. PEERS="graphs..." also runs
# bench/attention/peers.py on them in the same call. Logs go to $OUT.
# Usage: scripts/ab-revisions.sh BASE.tar [GRAPH...]   (no GRAPH: the two builds only)
set -uo pipefail
cd "$(dirname "$0")/.."
base_tar=${1:?usage: ab-revisions.sh BASE.tar GRAPH...}; shift
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
start=$SECONDS
base=/tmp/kiln-ab-base
sum=$(md5sum <"$base_tar" | cut -c1-32)
if [ "$(cat "$base/.tar-md5" 2>/dev/null)" != "$sum" ]; then  # the same BASE again keeps its build
  rm -rf "$base" && mkdir -p "$base"
  tar -xf "$base_tar" -C "$base" || exit 1
  echo "$sum" >"$base/.tar-md5"
fi
[ -d .deps ] && cp -r .deps "$base/"
xx() { [ -f /usr/include/xxhash.h ] || echo "-DKILN_XXHASH_INCLUDE_DIR=$1/.deps/include"; }
(cmake -S . -B build-device -G Ninja $(xx "$PWD") -DPython3_EXECUTABLE="$(command -v python3)" &&
  cmake --build build-device --target kiln_cli) >"$OUT/ab-build-new.log" 2>&1 &
new_pid=$!
(cd "$base" && cmake -S . -B build -G Ninja $(xx "$base") && cmake --build build --target kiln_cli) \
  >"$OUT/ab-build-base.log" 2>&1 &
base_pid=$!
wait $new_pid || { tail -n 30 "$OUT/ab-build-new.log"; echo "ab: build of this tree failed"; exit 1; }
wait $base_pid || { tail -n 30 "$OUT/ab-build-base.log"; echo "ab: build of BASE failed"; exit 1; }
echo "ab: builds $((SECONDS - start)) s"
for g in "$@"; do
  for r in 1 2; do
    for side in base new; do
      bin=build-device/bin/kiln; [ $side = base ] && bin=$base/build/bin/kiln
      log="$OUT/ab-$side-$r-$(basename "$g" .json).log"
      timeout 120 "$bin" bench "$g" >"$log" 2>&1
      alone=$(grep -A1 "^kernel " "$log" | tail -n 1 | awk '{print $1, $2}')
      plan=$(grep -E "^plan:" "$log" | sed -E "s/.*Plan::run ([0-9.]+) us, Plan::replay ([0-9.]+) us.*/run \1 replay \2/")
      echo "$side r$r $(basename "$g" .json): alone $alone $plan"
    done
  done
done
echo "ab: benches $((SECONDS - start)) s"
if [ -n "${PEERS:-}" ]; then
  timeout 200 python3 bench/attention/peers.py $PEERS 2>&1 | tee "$OUT/ab-peers.log"
fi
