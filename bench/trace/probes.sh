#!/usr/bin/env bash
# On the GPU machine: the convolution probes of bench/trace built with nvcc for sm_90a and run
# (about 30 s): wgmma_probe (the products alone), tma_probe (the loads alone, multicast, a
# whole-GPU read) and ring_probe (loads and products together, no epilogue); cluster_occupancy
# (how many clusters of each size fit at once) when named.
# Usage: bench/trace/probes.sh [wgmma_probe tma_probe ring_probe cluster_occupancy]
# Env: PROBE_ARGS, passed to each probe (ring_probe contention: only its contention rows;
#   tma_probe multicast: only its multicast rows).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
for p in ${*:-wgmma_probe tma_probe ring_probe}; do
  out=${TMPDIR:-/tmp}/kiln-$p
  nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Ikernel_templates \
    "bench/trace/$p.cu" -o "$out" -lcuda
  echo "== $p"
  "$out" ${PROBE_ARGS:-}
done
