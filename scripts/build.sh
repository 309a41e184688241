#!/usr/bin/env bash
# Configures and builds kiln into build/ (Ninja, RelWithDebInfo). Extra args go to cmake.
# Progress streams as ninja prints it; the whole log is also kept in build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda="${CUDA_HOME:-/usr/local/cuda}"
cmake -S . -B build -G Ninja -DCUDAToolkit_ROOT="$cuda" "$@" >build.log 2>&1 || { cat build.log; exit 1; }
if ! cmake --build build 2>&1 | tee -a build.log; then
  echo "build.sh: the build failed; the whole log is in $PWD/build.log" >&2
  exit 1
fi
