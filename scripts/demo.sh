#!/usr/bin/env bash
# Setup, build what the demo runs (the library, the CLI and the example apps: no test suite,
# benchmarks or Python module), then kiln's main job. With a GPU: the hello app twice (the second
# run compiles nothing), a user's own kernel template (examples/custom_kernel) and the seed apps
# (diffusion step, GFN, RustyGradients' ops, Gaussian field, spectral autoencoder). Without: the
# same kernels compiled for sm_90a into the cache. Ends with a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building kiln, its CLI and the example apps (about 3 minutes on 2 cores, less on more;"
echo "   ninja counts the steps as [done/total]; the whole log goes to build.log)"
scripts/build.sh -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF -DKILN_PYTHON=OFF
echo "== built in $((SECONDS / 60)) min $((SECONDS % 60)) s"
build/bin/kiln info
ran=()
step() {  # step "what" command...: prints the step, runs it, remembers it
  echo "== $1"
  shift
  "$@"
  ran+=("$(basename "$1")")
}
if build/bin/kiln info | grep -q '^device 0'; then
  step "first run" build/bin/hello
  step "second run (a new process: kernels come from the disk cache)" build/bin/hello
  step "a user's kernel template (examples/custom_kernel)" build/bin/custom_kernel
  step "seed 004's diffusion step and 50-step loop (examples/diffusion_step)" build/bin/diffusion_step
  step "seed 001's GFN leapfrog step and 8 steps (examples/gfn, a user's template)" build/bin/gfn
  step "seed 003's backend ops, op by op and replayed (examples/rusty_ops)" build/bin/rusty_ops
  step "seed 000's Gaussian field, forward, backward and training (examples/gaussian_field)" \
    build/bin/gaussian_field
  step "seed 002's spectral autoencoder on the GEMM family (examples/spectral_autoencoder)" \
    build/bin/spectral_autoencoder
else
  offline=(--offline --arch sm_90a)
  step "no GPU: precompiling hello's kernels for sm_90a (f32)" build/bin/hello "${offline[@]}"
  step "... and bf16" build/bin/hello "${offline[@]}" --dtype bf16
  step "a user's kernel template (examples/custom_kernel), compiled for sm_90a" \
    build/bin/custom_kernel "${offline[@]}"
  step "seed 004's diffusion step and 50-step loop (examples/diffusion_step), compiled for sm_90a" \
    build/bin/diffusion_step "${offline[@]}"
  step "seed 001's GFN leapfrog step (examples/gfn), compiled for sm_90a" build/bin/gfn "${offline[@]}"
  echo "== seed 003's backend ops (examples/rusty_ops), compiled for sm_90a"
  build/bin/rusty_ops "${offline[@]}" | tail -n 1 && ran+=(rusty_ops)
  echo "== seed 000's Gaussian field (examples/gaussian_field, user templates), compiled for sm_90a"
  build/bin/gaussian_field "${offline[@]}" | tail -n 1 && ran+=(gaussian_field)
  echo "== seed 002's spectral autoencoder (examples/spectral_autoencoder), compiled for sm_90a"
  build/bin/spectral_autoencoder "${offline[@]}" | tail -n 1 && ran+=(spectral_autoencoder)
fi
echo "== summary"
echo "ran: ${ran[*]} in $((SECONDS / 60)) min $((SECONDS % 60)) s"
build/bin/kiln cache stats | head -n 1
echo "next: build/bin/kiln cache ls (every kernel), build/bin/kiln plan G.json (a graph's kernels,"
echo "      docs/graph-format.md), scripts/test.sh (the test suite), README.md and docs/"
