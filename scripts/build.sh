#!/usr/bin/env bash
# Configures and builds kiln into build/ (Ninja, RelWithDebInfo). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda="${CUDA_HOME:-/usr/local/cuda}"
cmake -S . -B build -G Ninja -DCUDAToolkit_ROOT="$cuda" "$@" >build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build 2>&1 | tail -n 3
