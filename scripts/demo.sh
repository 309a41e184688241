#!/usr/bin/env bash
# Setup, build, then kiln's main job. With a GPU: the hello app twice (the second run compiles
# nothing), a user's own kernel template (examples/custom_kernel) and the seed apps (diffusion
# step, GFN, RustyGradients' ops, Gaussian field, spectral autoencoder). Without: the same
# kernels compiled for sm_90a into the cache, and the cache listed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/kiln info
if build/bin/kiln info | grep -q '^device 0'; then
  echo "== first run"; build/bin/hello
  echo "== second run (a new process: kernels come from the disk cache)"; build/bin/hello
  echo "== a user's kernel template (examples/custom_kernel)"; build/bin/custom_kernel
  echo "== seed 004's diffusion step and 50-step loop (examples/diffusion_step)"; build/bin/diffusion_step
  echo "== seed 001's GFN leapfrog step and 8 steps (examples/gfn, a user's template)"; build/bin/gfn
  echo "== seed 003's backend ops, op by op and replayed (examples/rusty_ops)"; build/bin/rusty_ops
  echo "== seed 000's Gaussian field, forward, backward and training (examples/gaussian_field)"
  build/bin/gaussian_field
  echo "== seed 002's spectral autoencoder on the GEMM family (examples/spectral_autoencoder)"
  build/bin/spectral_autoencoder
else
  echo "== no GPU: precompiling hello's kernels for sm_90a (f32 and bf16)"
  build/bin/hello --offline --arch sm_90a
  build/bin/hello --offline --arch sm_90a --dtype bf16
  echo "== a user's kernel template (examples/custom_kernel), compiled for sm_90a"
  build/bin/custom_kernel --offline --arch sm_90a
  echo "== seed 004's diffusion step and 50-step loop (examples/diffusion_step), compiled for sm_90a"
  build/bin/diffusion_step --offline --arch sm_90a
  echo "== seed 001's GFN leapfrog step (examples/gfn), compiled for sm_90a"
  build/bin/gfn --offline --arch sm_90a
  echo "== seed 003's backend ops (examples/rusty_ops), compiled for sm_90a"
  build/bin/rusty_ops --offline --arch sm_90a | tail -n 1
  echo "== seed 000's Gaussian field (examples/gaussian_field, user templates), compiled for sm_90a"
  build/bin/gaussian_field --offline --arch sm_90a | tail -n 1
  echo "== seed 002's spectral autoencoder (examples/spectral_autoencoder), compiled for sm_90a"
  build/bin/spectral_autoencoder --offline --arch sm_90a | tail -n 1
  echo "== the cache"
  build/bin/kiln cache ls
fi
