#!/usr/bin/env bash
# On a CUDA machine: build with CUDA, run the GPU tests (`ctest -L gpu`: the CUDA instance of
# every backend-parametrized test, and the CUDA-only ones), compute-sanitizer memcheck and
# racecheck + synccheck over them (the properties with 20 cases each; the six runs at once),
# and `dsv4 verify` on both backends. Logs go to OUTDIR.
# DEPS (optional): a folder with usr/ holding RapidCheck, nlohmann_json and CLI11 (unpacked
# Debian packages librapidcheck-dev, nlohmann-json3-dev, libcli11-dev), for machines that
# can't apt-get them.
set -uo pipefail
out=${1:?usage: gpu_check.sh OUTDIR [VERIFY_STEPS]}
steps=${2:-10000}
cd "$(dirname "$0")/.."
mkdir -p "$out"
extra=()
if [ -n "${DEPS:-}" ]; then
  # shellcheck source=scripts/deps_args.sh
  . scripts/deps_args.sh
  deps_cmake_args "$(cd "$DEPS" && pwd)"
  extra=("${deps_args[@]}")
fi
status=0
step() { echo "== $1: $2" | tee -a "$out/summary.txt"; }
{ nvidia-smi; nvcc --version; git rev-parse HEAD 2>/dev/null; } > "$out/env.txt" 2>&1
BUILD_DIR=build-gpu ./scripts/build.sh -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${extra[@]}" \
  > "$out/build.log" 2>&1 || { step build FAILED; tail -50 "$out/build.log"; exit 1; }
step build ok
ctest --test-dir build-gpu -L gpu --output-on-failure > "$out/gpu_tests.log" 2>&1 && r=ok || { r=FAILED; status=1; }
step "gpu tests" "$r ($(grep -E 'tests passed|tests failed' "$out/gpu_tests.log" | tail -1))"
grep -c "Skipped\|SKIPPED" "$out/gpu_tests.log" | xargs echo "   skipped lines:" | tee -a "$out/summary.txt"
./build-gpu/harness/dsv4 verify --steps "$steps" --backend all > "$out/verify.log" 2>&1 && r=ok || { r=FAILED; status=1; }
step "dsv4 verify --steps $steps --backend all" "$r"
tail -25 "$out/verify.log" | tee -a "$out/summary.txt"
# The three tools run at once (each its own process on the one GPU; 16-core machines): the
# slowest, racecheck over the 200-replay step-graph tests, sets the wall time.
sanitize() {  # sanitize TOOL EXE: one run, its log and verdict line in $out
  local tool=$1 exe=$2 leak=() r
  [ "$tool" = memcheck ] && leak=(--leak-check full)
  RC_PARAMS="max_success=20" timeout "${SANITIZER_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --error-exitcode 3 \
    "${leak[@]}" "./build-gpu/tests/$exe" --gtest_filter='Cuda*' > "$out/sanitizer_${tool}_$exe.log" 2>&1 &&
    r=ok || r="FAILED rc=$?"
  echo "$r ($(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer_${tool}_$exe.log" | tail -1); $(grep -E '^\[  (PASSED|FAILED) ' "$out/sanitizer_${tool}_$exe.log" | tr '\n' ' '))" > "$out/sanitizer_${tool}_$exe.verdict"
}
for tool in memcheck racecheck synccheck; do
  for exe in optimized_tests property_tests; do sanitize $tool $exe & done
done
wait
for tool in memcheck racecheck synccheck; do
  for exe in optimized_tests property_tests; do
    verdict=$(cat "$out/sanitizer_${tool}_$exe.verdict")
    case "$verdict" in ok*) ;; *) status=1 ;; esac
    step "compute-sanitizer $tool $exe" "$verdict"
  done
done
exit $status
