#!/usr/bin/env bash
# On a CUDA machine: build with CUDA, then (in two phases of runs at once) the GPU tests (`ctest -L gpu`: the CUDA
# instance of every backend-parametrized test, and the CUDA-only ones), `dsv4 verify` on both
# backends in every SPEC §8 mode, the shipped captures replayed, and compute-sanitizer
# memcheck, racecheck and synccheck over the CUDA tests (the properties with 20 cases each).
# Logs and summary.txt go to OUTDIR (ARCHIVE=1: the logs end up in OUTDIR/logs.tar.gz).
# PHASES (optional): tests (the build, GPU tests, verify and captures), sanitizers (the build
# and the sanitizer runs) or all (default): for device calls too short for both.
# SANITIZE_REPLAYS=0 (optional): the sanitizers skip the 200-replay step-graph tests, the longest
# runs (graphs launch only the checked kernels): for a change to the unchecked kernels alone,
# when a device call is too short for the whole phase.
# DEPS (optional): a folder with usr/ holding RapidCheck, nlohmann_json and CLI11 (unpacked
# Debian packages librapidcheck-dev, nlohmann-json3-dev, libcli11-dev), for machines that
# can't apt-get them.
# CUDA_FLAGS, CXX_FLAGS (optional): a trial's compile definitions (e.g. -DDSV4_MIN_CTAS_PER_SM=5;
# CXX_FLAGS too for a knob that changes host structs), so that its device code passes the same
# checks before it is adopted; built in ${BUILD_DIR:-build-gpu}.
set -uo pipefail
out=${1:?usage: gpu_check.sh OUTDIR [VERIFY_STEPS]}
steps=${2:-10000}
cd "$(dirname "$0")/.." || exit
mkdir -p "$out"
# shellcheck source=scripts/deps_args.sh
. scripts/deps_args.sh
# shellcheck source=scripts/archive_outputs.sh
. scripts/archive_outputs.sh
deps_from_env
status=0
step() { echo "== $1: $2" | tee -a "$out/summary.txt"; }
{ nvidia-smi; nvcc --version; git rev-parse HEAD 2>/dev/null; echo "CUDA_FLAGS=${CUDA_FLAGS:-} CXX_FLAGS=${CXX_FLAGS:-}"; } > "$out/env.txt" 2>&1
build=${BUILD_DIR:-build-gpu}
BUILD_DIR=$build ./scripts/build.sh -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${deps_args[@]}" \
  "-DCMAKE_CUDA_FLAGS=${CUDA_FLAGS:-}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS:-}" \
  > "$out/build.log" 2>&1 || { step build FAILED; tail -50 "$out/build.log"; exit 1; }
step build ok
# After the build, two phases of runs at once (one GPU, 16-core machines): the GPU tests, dsv4
# verify in every SPEC §8 mode on both backends and the shipped captures replayed; then the
# sanitizer runs, the slowest of which (racecheck over the 200-replay step-graph tests) sets
# the wall.
run_logged() {  # run_logged NAME COMMAND...: its log $out/NAME.log, its exit status $out/NAME.rc
  local name=$1
  shift
  timeout "${TIMEOUT:-${STAGE_TIMEOUT:-540}}" "$@" > "$out/$name.log" 2>&1
  echo $? > "$out/$name.rc"
}
verdict() {
  if [ "$(cat "$out/$1.rc")" = 0 ]; then echo ok; else status=1; echo "FAILED rc=$(cat "$out/$1.rc")"; fi
}
replay_captures() {
  local d rc=0
  for d in tests/data/capture_*; do
    "./$build/harness/dsv4" replay "$d" --backend all || { echo "FAILED: $d"; rc=1; }
  done
  return $rc
}
# 200 replays of a step graph per test: the longest runs under the sanitizers (H200, memcheck:
# Flash 181 s, Pro over 290 s), so each gets a process of its own; memcheck and racecheck over
# the other optimized tests take over 270 s in one process and run as 4 gtest shards.
graph_replays='Cuda/StepGraphTest.*ReplaysOfRandomDecodeSteps*'
sanitize() {  # sanitize TOOL EXE FILTER NAME [SHARD SHARDS]
  local tool=$1 exe=$2 filter=$3 name=$4 leak=() shards=()
  [ "$tool" = memcheck ] && leak=(--leak-check full)
  [ $# -ge 6 ] && shards=(GTEST_SHARD_INDEX="$5" GTEST_TOTAL_SHARDS="$6")
  RC_PARAMS="max_success=20" TIMEOUT=${SANITIZER_TIMEOUT:-540} run_logged "$name" env "${shards[@]}" \
    compute-sanitizer --tool "$tool" --error-exitcode 3 "${leak[@]}" "./$build/tests/$exe" --gtest_filter="$filter"
}
phases=${PHASES:-all}
if [ "$phases" != sanitizers ]; then
  run_logged gpu_tests ctest --test-dir "$build" -L gpu --output-on-failure &
  run_logged verify "./$build/harness/dsv4" verify --steps "$steps" --backend all --mode all &
  { replay_captures > "$out/replay_captures.log" 2>&1; echo $? > "$out/replay_captures.rc"; } &
  # verify's threads use every core: beside the nine sanitizer processes its first 1000 steps
  # took 265 s on an H200 machine (16 cores), so the sanitizers start once it is done.
  wait
fi
sanitizers=()
for tool in memcheck racecheck synccheck; do
  [ "$phases" = tests ] && break
  # memcheck and racecheck over the optimized tests take 270-400 s in one process beside the
  # other runs (H200): 4 gtest shards each, so that the phase fits one device call with the tests.
  shard_count=1
  [ "$tool" != synccheck ] && shard_count=4
  for ((shard = 0; shard < shard_count; ++shard)); do
    name="sanitizer_${tool}_optimized_tests"
    [ "$shard_count" -gt 1 ] && name+="_shard$shard"
    sanitize $tool optimized_tests "Cuda*:-$graph_replays" "$name" "$shard" "$shard_count" &
    sanitizers+=("$name")
  done
  sanitize $tool property_tests 'Cuda*' "sanitizer_${tool}_property_tests" &
  for model in Flash Pro; do
    [ "${SANITIZE_REPLAYS:-1}" = 0 ] && break
    sanitize $tool optimized_tests "Cuda/StepGraphTest.${model}ReplaysOfRandomDecodeSteps*" \
      "sanitizer_${tool}_graph_replays_$model" &
    sanitizers+=("sanitizer_${tool}_graph_replays_$model")
  done
  sanitizers+=("sanitizer_${tool}_property_tests")
done
wait
if [ "$phases" != sanitizers ]; then
  step "gpu tests" "$(verdict gpu_tests) ($(grep -E 'tests passed|tests failed' "$out/gpu_tests.log" | tail -1))"
  grep -c "Skipped\|SKIPPED" "$out/gpu_tests.log" | xargs echo "   skipped lines:" | tee -a "$out/summary.txt"
  step "dsv4 verify --steps $steps --backend all --mode all" "$(verdict verify)"
  tail -25 "$out/verify.log" | tee -a "$out/summary.txt"
  step "dsv4 replay tests/data/capture_* --backend all" "$(verdict replay_captures)"
fi
for name in "${sanitizers[@]}"; do
  step "compute-sanitizer ${name#sanitizer_}" \
    "$(verdict "$name") ($(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$name.log" | tail -1); $(grep -E '^\[  (PASSED|FAILED) ' "$out/$name.log" | tr '\n' ' '))"
done
# ARCHIVE=1: ~40 logs and exit codes into OUTDIR/logs.tar.gz, summary.txt beside it.
archive_outputs "$out" summary.txt
exit $status
