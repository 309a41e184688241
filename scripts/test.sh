#!/usr/bin/env bash
# The README's test command (and what .ci/run calls): setup, build, the whole suite.
# GPU cases run where a GPU is present and are reported as skipped elsewhere; then the
# compile-only fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Everything: a build configured by scripts/demo.sh (no tests, benchmarks or Python) is switched
# back.
scripts/build.sh -DKILN_BUILD_TESTS=ON -DKILN_BUILD_BENCH=ON -DKILN_PYTHON=ON
# libcuda is opened with dlopen, never linked: a binary linking it would not start without a GPU.
if readelf -d build/lib/libkiln.so | grep -q 'libcuda\.so'; then
  echo "test.sh: build/lib/libkiln.so links libcuda; it must only dlopen it" >&2
  exit 1
fi
log=$(mktemp)
set +e
build/bin/kiln_tests "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The Python module's suite (python/tests), with the interpreter the module was built for.
if [ -f build/python/interpreter ]; then
  PYTHONPATH=build/python "$(cat build/python/interpreter)" -m pytest -q -p no:cacheprovider python/tests
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 5 ] || status=1  # 5: no tests collected
else
  echo "test.sh: no Python module was built (pybind11-dev missing?)" >&2
  status=1
fi
# The Rust crates (bindings/rust: cargo test, offline) against this build's library, and the
# Rust example's build, where Debian's cargo is installed (scripts/setup.sh installs it).
if [ -x /usr/bin/cargo ]; then
  lib="$PWD/build/lib"
  (cd bindings/rust && PATH=/usr/bin:$PATH KILN_LIB_DIR="$lib" LD_LIBRARY_PATH="$lib" cargo test --offline -q) || status=1
  (cd examples/rust_backend && PATH=/usr/bin:$PATH KILN_LIB_DIR="$lib" cargo build --offline -q) || status=1
else
  echo "test.sh: no /usr/bin/cargo: the Rust crates were not tested (scripts/setup.sh installs cargo)" >&2
fi
# The layer check (scripts/layers.txt), and its own test.
python3 scripts/test_layer_check.py || status=1
python3 scripts/layer_check.py || status=1
# File and function sizes, engine/'s top level (scripts/size_check.py).
python3 scripts/size_check.py || status=1
# 500 random fused graphs, planned and NVRTC-compiled (no GPU needed); failures are shrunk.
build/bin/kiln_fuzz --compile-only --seeds 0:500 -j 2 || status=1
set -e
# One plain closing line: "N passed, N failed, N skipped" (test cases).
summary=$(grep -E '^\[doctest\] test cases:' "$log" | tail -n 1)
rm -f "$log"
if [[ "$summary" =~ ([0-9]+)\ passed\ \|\ +([0-9]+)\ failed\ \|\ +([0-9]+)\ skipped ]]; then
  echo "${BASH_REMATCH[1]} passed, ${BASH_REMATCH[2]} failed, ${BASH_REMATCH[3]} skipped"
fi
exit "$status"
