#!/usr/bin/env bash
# Setup, build, then kiln's main job. With a GPU: the hello app twice (the second run compiles
# nothing). Without: hello's kernels compiled for sm_90a into the cache, and the cache listed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/kiln info
if build/bin/kiln info | grep -q '^device 0'; then
  echo "== first run"; build/bin/hello
  echo "== second run (a new process: kernels come from the disk cache)"; build/bin/hello
else
  echo "== no GPU: precompiling hello's kernels for sm_90a (f32 and bf16)"
  build/bin/hello --offline --arch sm_90a
  build/bin/hello --offline --arch sm_90a --dtype bf16
  echo "== the cache"
  build/bin/kiln cache ls
fi
