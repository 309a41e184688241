#!/usr/bin/env bash
# Installs what kiln's build needs from Debian's packages. Idempotent; downloads nothing else.
# The CUDA toolkit (NVRTC, headers) is expected in /usr/local/cuda or $CUDA_HOME.
set -euo pipefail

packages=(cmake ninja-build g++ libspdlog-dev libfmt-dev doctest-dev nlohmann-json3-dev libxxhash-dev libcli11-dev
          pybind11-dev python3-dev python3-pytest libdlpack-dev universal-ctags
          libhiredis-dev redis-server libssl-dev cargo rustc)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "setup: no CUDA toolkit at $cuda (need nvrtc.h and libnvrtc); install CUDA 12+ or set CUDA_HOME" >&2
  exit 1
fi
echo "setup: ok (CUDA toolkit at $cuda)"
