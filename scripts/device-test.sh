#!/usr/bin/env bash
# On the GPU machine: build there, run the whole suite, the GPU cases under compute-sanitizer
# (memcheck), the hello app twice, and the benchmark. Logs go to $OUT.
# Usage: scripts/device-test.sh [MODE...]  MODE: tests|sanity|memcheck|fuzz|tune|bench|gemm|attention|dynamic|python|pyexamples|APP|all (default
#   all, which takes longer than one 600 s device call: split it). On an H100, after a ~100 s
#   build: tests (the suite: slices of its GPU cases and the others, side by side) ~250 s;
#   sanity (racecheck of the row cases and of tests/sanitize*/*.json, their memcheck and the
#   attention graphs' synccheck, hello, bundle) ~50 s; memcheck (every GPU case) > 300 s;
#   fuzz: the GPU regressions, the fuzz run and its memcheck sample; tune: `kiln tune` over the
#   benchmark's row grid (the bench after it then runs with those records and also untuned);
#   bench ~150 s; dynamic: kiln_bench_dynamic (softmax and layer_norm over 200 dynamic row
#   lengths, bucket kernels against per-length ones);
#   python: pytest of python/tests with the machine's torch and CuPy; pyexamples: examples/python
#   beside torch (not part of all); gemm: `kiln bench` of bench/gemm/*.json, then their peers
#   (bench/gemm/peers.py: cuBLAS, torch.compile) in the same call, and bench/gemm_medium.py
#   (products of a few tiles, graphed beside cuBLAS) (not part of all); attention:
#   the "gpu: attention" tests, `kiln bench` of bench/attention/*.json, then torch SDPA on them
#   (bench/attention/peers.py: flash and cuDNN backends, CUDA graphs; ATTENTION_TESTS=0 skips the
#   tests), the calls of bench/attention/lse (with the log-sum-exp too), those of
#   bench/attention/prologue (q cast from f32, fused and --no-fuse), and the decode bench
#   (bench/attention_decode.py, beside torch SDPA) (not part of all);
#   APP one of diffusion|gfn|rusty_ops|gaussian_field|spectral_autoencoder: the seed app beside PyTorch (bench/APP.py;
#   not part of all); dyngemm: bench/dynamic_gemm.py on a bundle of bench/dynamic_mlp.json made
#   beforehand without a GPU into .device/mlp.kbundle (not part of all).
# Env: FUZZ_SEEDS=A:B FUZZ_TIMEOUT=s FUZZ_SANITIZE=A:B (see below); CPU_TESTS=0: tests runs the
#   GPU cases only (the CPU cases take ~450 s on the GPU host and run in CI anyway).
# Where xxhash.h is not installed, a copy in .deps/include serves (docs/testing.md).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
status=0
modes=" ${*:-all} "
want() { [[ "$modes" == *" $1 "* || "$modes" == *" all "* ]]; }
FUZZ_SEEDS="${FUZZ_SEEDS:-0:1000}"        # GPU fuzz range; FUZZ_TIMEOUT bounds it
FUZZ_TIMEOUT="${FUZZ_TIMEOUT:-120}"
FUZZ_SANITIZE="${FUZZ_SANITIZE:-0:32}"  # sample run again under memcheck ("none": skip)
step() { echo; echo "=== $1"; }
# The device tool brings back at most 8 files from $OUT, in name order: at exit (a timeout's TERM
# too) a copy of every file there goes into $OUT/00-logs.tgz, which sorts first.
bundle_logs() {
  (cd "$OUT" && find . -maxdepth 1 -type f ! -name 00-logs.tgz | sed 's|^\./||' |
    tar -czf 00-logs.tgz -T -) 2>/dev/null
}
trap bundle_logs EXIT
trap 'exit 143' TERM INT

step "build"
extra=()
[ -f /usr/include/xxhash.h ] || extra+=("-DKILN_XXHASH_INCLUDE_DIR=$PWD/.deps/include")
extra+=("-DPython3_EXECUTABLE=$(command -v python3)")  # the one with torch and pybind11
if ! { cmake -S . -B build-device -G Ninja "${extra[@]}" && cmake --build build-device; } >"$OUT/build.log" 2>&1; then
  tail -n 40 "$OUT/build.log"; echo "device-test: build failed"; exit 1
fi
tail -n 2 "$OUT/build.log"
bin=build-device/bin
$bin/kiln info | tee "$OUT/info.log"

if want tests; then
step "test suite: the GPU cases in 20 processes (each compiles its kernels on one core) beside the rest"
# NVRTC dominates: one process took ~430 s; its slices side by side take the longest slice's time
# (the attention cases alone took ~400 s in one: a process each, ~150 s; the packed rows took
# ~190 s of a rest slice that ran past 420 s; the GEMM cases ran past 460 s in one).
slices=("gpu: every op x dtype x layout*" "gpu: every row op x dtype*" "gpu: long rows (f32*" "gpu: long rows (f16*"
        "gpu: row ops along*,gpu: tune_graph*,gpu: *dynamic*"
        "gpu: attention against*" "gpu: attention reuses*" "gpu: attention with a prologue*"
        "gpu: attention with an epilogue*" "gpu: attention with folded*" "gpu: attention's decode*"
        "gpu: attention's epilogue behind*" "gpu: attention's sm_90a*"
        "gpu: group_norm*,gpu: batch_norm*,gpu: var*,gpu: reductions over*,gpu: gather*,gpu: argmax*,gpu: integer sum*,gpu: a KV append*"
        "gpu: matmul*,gpu: every epilogue pattern*,gpu: every split*,gpu: f32 4096*"
        "gpu: persistent*,gpu: the wgmma*"
        "gpu: conv2d*" "gpu: rows packed*" "gpu: length-1 axes*,gpu: regressions*,gpu: concat of*")
pids=()
for i in "${!slices[@]}"; do
  timeout 460 stdbuf -oL $bin/kiln_tests -tc="${slices[$i]}" >"$OUT/tests-gpu$i.log" 2>&1 & pids+=($!)
done
all=$(IFS=,; echo "${slices[*]}")
rest=${#slices[@]}
timeout 460 stdbuf -oL $bin/kiln_tests -tc="gpu:*" -tce="$all" >"$OUT/tests-gpu$rest.log" 2>&1 & pids+=($!)
parts=$(seq -f "gpu%g" 0 "$rest")
if [ "${CPU_TESTS:-1}" != 0 ]; then
  timeout 460 stdbuf -oL $bin/kiln_tests -tce="gpu:*" >"$OUT/tests-cpu.log" 2>&1 & pids+=($!)
  parts="$parts cpu"
fi
for p in "${pids[@]}"; do wait "$p" || status=1; done
for part in $parts; do
  echo "-- $part"; grep -E "^\[doctest\] (test cases|assertions)|ERROR|MESSAGE|CRASHED" "$OUT/tests-$part.log" | tail -n 20
done
awk '/^\[doctest\] test cases:/ {p += $6; f += $9} END {printf "suite: %d passed, %d failed (each case runs in one process; the others count it as skipped)\n", p, f}' "$OUT"/tests-*.log
fi

if [[ "$modes" == *" fuzz "* ]]; then
step "GPU cases of the reference checks"
$bin/kiln_tests -tc="gpu: regressions*,gpu: random fused*" 2>&1 | tail -n 12
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want fuzz; then
step "fuzz: random fused graphs (seeds $FUZZ_SEEDS) against the fp64 model of each plan"
# One process per core, each on a slice of the seeds (threads of one process scaled badly in
# GPU mode: see FUZZ_SCALING). SIGTERM at the time limit: each reports what it did.
if [ -n "${FUZZ_SCALING:-}" ]; then  # compile-only: 16 threads of one process vs 16 processes
  /usr/bin/time -f "one process, $(nproc) threads: %e s" $bin/kiln_fuzz --compile-only --seeds 0:192 -j "$(nproc)" | tail -n 1
  /usr/bin/time -f "$(nproc) processes: %e s" bash -c "for p in \$(seq 0 $(( $(nproc) - 1 ))); do
    $bin/kiln_fuzz --compile-only --seeds \$((p * 192 / $(nproc))):\$(((p + 1) * 192 / $(nproc))) -j 1 >/dev/null & done; wait"
fi
first=${FUZZ_SEEDS%:*}; last=${FUZZ_SEEDS#*:}; procs=$(nproc); chunk=$(( (last - first + procs - 1) / procs ))
gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true); [ "${gpus:-0}" -ge 1 ] || gpus=1  # processes spread over them
mkdir -p "$OUT/fuzz"
fuzz_start=$SECONDS
for ((p = 0; p < procs; p++)); do
  a=$(( first + p * chunk )); b=$(( a + chunk < last ? a + chunk : last ))
  [ $a -lt $b ] || continue
  { CUDA_VISIBLE_DEVICES=$((p % gpus)) timeout -k 60 "$FUZZ_TIMEOUT" $bin/kiln_fuzz --seeds $a:$b -j 1 \
    --regressions "$OUT/fuzz" >"$OUT/fuzz/p$p.log" 2>&1
    rc=$?; grep -qE "^fuzz: [0-9]+ graphs, " "$OUT/fuzz/p$p.log" ||
      echo "fuzz: process $p (seeds $a:$b) ended without a report (exit $rc): $(grep "^fuzz: seed" "$OUT/fuzz/p$p.log" | tail -n 2 | tr '\n' ' ')"; } &
done
wait
echo "fuzz: all processes done in $((SECONDS - fuzz_start)) s"
cat "$OUT"/fuzz/p*.log > "$OUT/fuzz.log"
grep -hE "FAILED|shrunk|stopped early" "$OUT/fuzz.log" | head -n 20
awk -v gpus="$gpus" '/^fuzz: [0-9]+ graphs, [0-9]+ failures/ {g += $2; f += $4; n++}
     END {printf "fuzz: %d graphs, %d failures (%d processes on %d GPUs)\n", g, f, n, gpus}' "$OUT/fuzz.log"
grep -q "FAILED" "$OUT/fuzz.log" && status=1

if [ "$FUZZ_SANITIZE" != none ]; then
step "compute-sanitizer memcheck on a fuzz sample (seeds $FUZZ_SANITIZE)"
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 $bin/kiln_fuzz --seeds "$FUZZ_SANITIZE" \
  -j "$(nproc)" --no-shrink >"$OUT/fuzz-memcheck.log" 2>&1
rc=$?
grep -E "ERROR SUMMARY|^fuzz:" "$OUT/fuzz-memcheck.log" | tail -n 3
[ $rc -eq 0 ] || { status=1; echo "fuzz memcheck exit $rc"; grep -v "^ \|^{\|^}" "$OUT/fuzz-memcheck.log" | tail -n 20; }

fi
fi

if want sanity; then
step "compute-sanitizer racecheck on the row kernels (shared-memory reductions, the bucket kernels' cluster merge)"
timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
  $bin/kiln_tests -tc="gpu: eager row ops*,gpu: random fused graphs*,gpu: regressions*,gpu: row ops along any axis*,gpu: rows of a dynamic length*" \
  >"$OUT/racecheck.log" 2>&1
rc=$?
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|^\[doctest\] test cases" "$OUT/racecheck.log" | tail -n 3
[ $rc -eq 0 ] || { status=1; echo "racecheck exit $rc"; tail -n 30 "$OUT/racecheck.log"; }
# group_norm's cooperative kernel (its shared sums, the merge through the workspace).
for tool in racecheck memcheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
    $bin/kiln_tests -tc="gpu: group_norm grouped*" >"$OUT/$tool-grouped.log" 2>&1
  rc=$?
  echo "$tool group_norm grouped: exit $rc"
  [ $rc -eq 0 ] || { status=1; tail -n 30 "$OUT/$tool-grouped.log"; }
done
# The split rows (clusters) on small graphs: the suite's long rows under racecheck ran past 300 s.
# A log per graph and tool stays out of $OUT unless it failed: 20 files crowd what comes back.
sanitize_logs=$(mktemp -d)
for g in tests/sanitize/*.json tests/sanitize_gemm/*.json tests/sanitize_conv/*.json tests/sanitize_concat/*.json \
         tests/sanitize_attention/*.json; do
  tools="racecheck memcheck"
  [[ "$g" == *sanitize_attention* ]] && tools="$tools synccheck"  # warp-level waits, cluster merge
  for tool in $tools; do
    log="$sanitize_logs/$tool-$(basename "$g" .json).log"
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $bin/kiln bench --reps 1 "$g" >"$log" 2>&1
    rc=$?
    echo "$tool $(basename "$g"): exit $rc, $(grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$log" | sed 's/=* *//')"
    [ $rc -eq 0 ] || { status=1; tail -n 20 "$log"; cp "$log" "$OUT/"; }
  done
done

step "hello, twice, on a fresh cache"
export KILN_CACHE_DIR=$(mktemp -d)
{ $bin/hello && echo "--- second process" && $bin/hello; } 2>&1 | tee "$OUT/hello.log" || status=1
unset KILN_CACHE_DIR

if [ -f .device/hello.kbundle ]; then
  step "hello with only a bundle made on the GPU-less machine (.device/hello.kbundle), then cold"
  md5sum /usr/local/cuda/include/cuda_fp16.h /usr/local/cuda/include/cuda_bf16.h | cut -c1-12
  KILN_BUNDLE=.device/hello.kbundle $bin/kiln info | tail -n 1
  KILN_BUNDLE=.device/hello.kbundle KILN_CACHE_DIR=$(mktemp -d) $bin/kiln cache explain .device/hello.manifest
  { echo "--- bundle only, empty cache"; KILN_BUNDLE=.device/hello.kbundle KILN_CACHE_DIR=$(mktemp -d) $bin/hello
    echo "--- cold: empty cache, no bundle"; KILN_CACHE_DIR=$(mktemp -d) $bin/hello; } 2>&1 | tee "$OUT/bundle.log" |
    grep -E "^---|first result|^cache" || status=1
fi

fi

if want memcheck; then
step "compute-sanitizer memcheck on the GPU cases (MEMCHECK_CASES)"
timeout "${MEMCHECK_TIMEOUT:-400}" compute-sanitizer --tool memcheck --error-exitcode 9 \
  $bin/kiln_tests -tc="${MEMCHECK_CASES:-gpu:*}" -tce="*2^31*" >"$OUT/memcheck.log" 2>&1
rc=$?
grep -E "ERROR SUMMARY|^\[doctest\] test cases" "$OUT/memcheck.log" | tail -n 3
[ $rc -eq 0 ] || { status=1; echo "memcheck exit $rc"; tail -n 30 "$OUT/memcheck.log"; }
fi

untuned=()
if [[ "$modes" == *" tune "* ]]; then
step "kiln tune over the benchmark's row grid (log: tune.log; records: ~/.cache/kiln/tuning)"
grid=$(mktemp -d)  # not under $OUT: 26 small files crowd what comes back
$bin/kiln_bench_rows --save-graphs "$grid"
timeout "${TUNE_TIMEOUT:-300}" $bin/kiln tune "$grid"/*.json >"$OUT/tune.log" 2>"$OUT/tune-progress.log"
rc=$?
grep -c "output checked" "$OUT/tune.log" | sed 's/^/candidates checked against the default: /'
grep -c "discarded" "$OUT/tune.log" | sed 's/^/candidates discarded: /'
sed -n '/^kernel /,$p' "$OUT/tune.log"
[ $rc -eq 0 ] || { status=1; echo "kiln tune exit $rc"; tail -n 5 "$OUT/tune-progress.log"; }
untuned=(--untuned-too)
fi

if want bench; then
step "benchmark (elementwise and row ops)"
PYTHONUNBUFFERED=1 timeout 480 python3 bench/run.py --bin $bin "${untuned[@]}" \
  --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" || status=1
fi

if [[ "$modes" == *" gemm "* ]]; then
step "GEMM bench graphs beside cuBLAS and torch.compile (bench/gemm; logs gemm-*.log)"
for g in bench/gemm/*.json; do
  timeout 120 $bin/kiln bench "$g" >"$OUT/gemm-$(basename "$g" .json).log" 2>&1 || status=1
  echo "$g"; tail -n 6 "$OUT/gemm-$(basename "$g" .json).log"
done
timeout 300 python3 bench/gemm/peers.py bench/gemm/*.json 2>&1 | tee "$OUT/gemm-peers.log" || status=1
PYTHONPATH="$PWD/build-device/python:$PWD/bench" timeout 200 python3 bench/gemm_medium.py 2>&1 |
  tee "$OUT/gemm-medium.log" || status=1
fi

if [[ "$modes" == *" attention "* ]]; then
step "attention: its GPU tests, its bench graphs beside torch SDPA (flash and cuDNN; logs attention-*.log)"
if [ "${ATTENTION_TESTS:-1}" != 0 ]; then  # 0: the bench alone (the suite ran them already)
timeout 360 $bin/kiln_tests -tc="gpu: attention*" -s >"$OUT/attention-tests.log" 2>&1 || status=1
grep -E "largest error|ERROR|test cases" "$OUT/attention-tests.log" | tail -n 25
fi
# bench/attention/lse: the same calls with the log-sum-exp as a second output (no peer).
for g in bench/attention/*.json bench/attention/lse/*.json; do
  timeout 120 $bin/kiln bench "$g" >"$OUT/attention-$(basename "$g" .json).log" 2>&1 || status=1
  echo "$g"; tail -n 4 "$OUT/attention-$(basename "$g" .json).log"
done
# bench/attention/prologue: q cast from f32 in attention's kernel, then as its own kernel.
for g in bench/attention/prologue/*.json; do
  for fuse in "" --no-fuse; do
    echo "$g ${fuse:-fused}"
    timeout 120 $bin/kiln bench $fuse "$g" 2>&1 | grep "^plan" || status=1
  done
done
timeout 120 python3 bench/attention/peers.py bench/attention/*.json 2>&1 | tee "$OUT/attention-peers.log" || status=1
PYTHONPATH="$PWD/build-device/python${PYTHONPATH:+:$PYTHONPATH}" timeout 120 python3 bench/attention_decode.py \
  2>&1 | tee "$OUT/attention-decode.log" || status=1
fi

if want dynamic; then
step "rows of a dynamic length: bucket kernels against kernels per length (kiln_bench_dynamic)"
timeout 300 $bin/kiln_bench_dynamic >"$OUT/bench-dynamic.log" 2>&1 || status=1
tail -n 3 "$OUT/bench-dynamic.log"
fi

if want python; then
step "Python: the pytest suite with torch, CuPy and the GPU (python/tests)"
PYTHONPATH="$PWD/build-device/python" timeout 400 python3 -X faulthandler -m pytest -v -rs \
  -p no:cacheprovider python/tests >"$OUT/pytest.log" 2>&1 || status=1
grep -E "PASSED|FAILED|SKIPPED|ERROR|Fatal|passed|failed" "$OUT/pytest.log" | tail -n 40
fi

if [[ "$modes" == *" pyexamples "* ]]; then
step "Python examples beside torch (examples/python)"
for ex in diffusion_step layer_norm_block gaussian_field; do
  PYTHONPATH="$PWD/build-device/python" timeout 300 python3 examples/python/$ex.py \
    >"$OUT/pyexample-$ex.log" 2>&1 || status=1
  tail -n 4 "$OUT/pyexample-$ex.log"
done
fi

if [[ "$modes" == *" dyngemm "* ]]; then
step "a dynamic-batch MLP from a bundle made without a GPU (.device/mlp.kbundle of bench/dynamic_mlp.json)"
KILN_BUNDLE=.device/mlp.kbundle KILN_CACHE_DIR=$(mktemp -d) $bin/kiln cache explain bench/dynamic_mlp.json
KILN_BUNDLE=.device/mlp.kbundle KILN_CACHE_DIR=$(mktemp -d) PYTHONPATH="$PWD/build-device/python" \
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/dynamic_gemm.py 2>&1 | tee "$OUT/dynamic-gemm.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

for app in diffusion gfn rusty_ops gaussian_field spectral_autoencoder; do
  [[ "$modes" == *" $app "* ]] || continue
  step "seed app $app beside PyTorch (bench/$app.py)"
  PYTHONUNBUFFERED=1 timeout 400 python3 bench/$app.py --bin $bin >"$OUT/app-$app.log" 2>&1 || status=1
  grep -v '^{' "$OUT/app-$app.log" | tail -n 80
done

echo; echo "device-test: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
