#!/usr/bin/env bash
# On the GPU machine: revisions of kiln side by side in one device call. Builds the CLI from
# this tree (build-device) and from BASE (a tar of a revision's tree, made where git is: `git
# archive REV > .device/base.tar`, carried with the call; this tree's .deps serve it too), both
# builds at once; then `kiln bench` of each GRAPH, base then new, twice, printing each
# kernel-alone time and Plan::run / Plan::replay. PEERS="graphs..." also runs
# bench/attention/peers.py on them in the same call. Logs go to $OUT.
# NEW="a.tar b.tar": the new sides are those tars' trees, not this one, all built at once beside
# BASE and timed in turn after it (several staged branches against one BASE in one call; a tar
# already built keeps its build). PY="bench/x.py ARGS":
# the Python module is built too, and this tree's bench/x.py runs on each side's module, base
# then new, twice (bench/ on the path).
# Usage: scripts/ab-revisions.sh BASE.tar [GRAPH...]   (no GRAPH and no PY: the two builds only)
set -uo pipefail
cd "$(dirname "$0")/.."
base_tar=${1:?usage: ab-revisions.sh BASE.tar GRAPH...}; shift
graphs=("$@")
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
start=$SECONDS
here=$PWD
# A tar's tree in DIR, kept (with its build) while the tar is the same.
unpack() {
  local tar=$1 dir=$2 sum
  sum=$(md5sum <"$tar" | cut -c1-32)
  if [ "$(cat "$dir/.tar-md5" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    tar -xf "$tar" -C "$dir" || return 1
    echo "$sum" >"$dir/.tar-md5"
  fi
  [ -d .deps ] && cp -r .deps "$dir/"
  return 0
}
base=/tmp/kiln-ab-base
unpack "$base_tar" "$base" || exit 1
# The sides after base: NAME DIR BUILD each.
sides=()
if [ -n "${NEW:-}" ]; then
  for tar in $NEW; do
    name=$(basename "$tar" .tar)
    unpack "$tar" "/tmp/kiln-ab-new-$name" || exit 1
    sides+=("$name /tmp/kiln-ab-new-$name build")
  done
else
  sides+=("new $here build-device")
fi
targets=(kiln_cli); [ -n "${PY:-}" ] && targets+=(_kiln)
xx() { [ -f /usr/include/xxhash.h ] || echo "-DKILN_XXHASH_INCLUDE_DIR=$1/.deps/include"; }
build() {  # DIR BUILD: the CLI (and the module) of the tree in DIR
  cd "$1" && cmake -S . -B "$2" -G Ninja $(xx "$1") -DPython3_EXECUTABLE="$(command -v python3)" &&
    cmake --build "$2" --target "${targets[@]}"
}
all=("base $base build" "${sides[@]}")
pids=()
for s in "${all[@]}"; do
  set -- $s
  (build "$2" "$3") >"$OUT/ab-build-$1.log" 2>&1 &
  pids+=($!)
done
for i in "${!all[@]}"; do
  set -- ${all[$i]}
  wait "${pids[$i]}" || { tail -n 30 "$OUT/ab-build-$1.log"; echo "ab: build of $1 failed"; exit 1; }
done
echo "ab: builds $((SECONDS - start)) s"
for g in "${graphs[@]}"; do
  for r in 1 2; do
    for s in "${all[@]}"; do
      set -- $s
      log="$OUT/ab-$1-$r-$(basename "$g" .json).log"
      timeout 120 "$2/$3/bin/kiln" bench "$g" >"$log" 2>&1
      alone=$(grep -A1 "^kernel " "$log" | tail -n 1 | awk '{print $1, $2}')
      plan=$(grep -E "^plan:" "$log" | sed -E "s/.*Plan::run ([0-9.]+) us, Plan::replay ([0-9.]+) us.*/run \1 replay \2/")
      echo "$1 r$r $(basename "$g" .json): alone $alone $plan"
    done
  done
done
if [ -n "${PY:-}" ]; then
  for r in 1 2; do
    for s in "${all[@]}"; do
      set -- $s
      echo "== $1 r$r: $PY"
      PYTHONPATH="$2/$3/python:$here/bench" timeout 200 python3 $PY 2>&1 | tee -a "$OUT/ab-py-$1.log"
    done
  done
fi
echo "ab: benches $((SECONDS - start)) s"
if [ -n "${PEERS:-}" ]; then
  timeout 200 python3 bench/attention/peers.py $PEERS 2>&1 | tee "$OUT/ab-peers.log"
fi
