#!/usr/bin/env bash
# On the GPU machine: where one kernel's time goes, or a staged variant's speed. A copy of this
# tree in /tmp/kiln-traced with bench/trace/NAME.patch applied (attention_*, conv_sm90: clock64
# records of the kernel's phases, copied over its output at the end: the output is then a trace,
# not a result), its Python module built, then bench/trace/NAME.py ARGS.
# Usage: bench/trace/run.sh NAME [ARGS...]   NAME: attention_sm90 | attention_decode | conv_sm90 |
#   split_cost
# Env: TRACE_DIR (default /tmp/kiln-traced), TRACE_BUILD_ONLY=1 (two copies built side by side),
#   TRACE_EXTRA (more bench/trace patches, by name, applied after NAME's in that order)
set -uo pipefail
cd "$(dirname "$0")/../.."
name=${1:?usage: bench/trace/run.sh NAME [ARGS...] (NAME: bench/trace/NAME.patch and .py)}; shift
export PATH=/usr/local/cuda/bin:$PATH
dir=${TRACE_DIR:-/tmp/kiln-traced}  # TRACE_DIR: another copy (two revisions side by side)
rm -rf "$dir" && mkdir -p "$dir"
tar --exclude=./build-device --exclude=./build -cf - . | tar -xf - -C "$dir"
cd "$dir" && patch -p1 -s <"bench/trace/$name.patch" || exit 1
for more in ${TRACE_EXTRA:-}; do patch -p1 -s <"bench/trace/$more.patch" || exit 1; done
extra=(); [ -f /usr/include/xxhash.h ] || extra+=("-DKILN_XXHASH_INCLUDE_DIR=$dir/.deps/include")
start=$SECONDS
(cmake -S . -B build -G Ninja "${extra[@]}" -DPython3_EXECUTABLE="$(command -v python3)" &&
  cmake --build build --target _kiln) >"$dir/build.log" 2>&1 ||
  { tail -n 30 "$dir/build.log"; exit 1; }
echo "trace: build $((SECONDS - start)) s"
[ -n "${TRACE_BUILD_ONLY:-}" ] && exit 0  # then: PYTHONPATH=$dir/build/python python3 $dir/bench/trace/NAME.py
PYTHONPATH="$dir/build/python" python3 "bench/trace/$name.py" "$@"
