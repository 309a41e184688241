#!/usr/bin/env bash
# On the GPU machine, after scripts/device-test.sh built build-device: each seed app run with
# KILN_RECORD on an empty cache; `kiln precompile` of that manifest in another process into
# another empty cache; `kiln cache pack` of it; then the app again on a third empty cache with only
# that bundle (KILN_BUNDLE): it must compile nothing. Prints each app's two compile counts.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build-device/bin
status=0
for app in diffusion_step gfn rusty_ops gaussian_field; do
  t=$(mktemp -d)
  KILN_CACHE_DIR=$t/run KILN_RECORD=$t/manifest.txt $bin/$app >$t/first.log 2>&1 || status=1
  KILN_CACHE_DIR=$t/pre $bin/kiln precompile --arch "$($bin/kiln info | sed -n 's/.*(\(sm_[0-9a-z]*\),.*/\1/p' | head -n 1)" \
    $t/manifest.txt >$t/precompile.log 2>&1 || { status=1; tail -n 5 $t/precompile.log; }
  KILN_CACHE_DIR=$t/pre $bin/kiln cache pack $t/app.kbundle >/dev/null 2>&1 || status=1
  KILN_BUNDLE=$t/app.kbundle KILN_CACHE_DIR=$t/bundled $bin/$app >$t/second.log 2>&1 || status=1
  first=$(grep '^compiles:' $t/first.log | tail -n 1); second=$(grep '^compiles:' $t/second.log | tail -n 1)
  echo "$app: recorded $(wc -l <$t/manifest.txt) kernels; first run $first; bundle only: $second"
  [ "$second" = "compiles: 0" ] || status=1
done
exit $status
