#!/usr/bin/env bash
# The checks a kernel trial's device call runs on the build it chose, in the time it has left:
# scripts/gpu_check.sh's GPU tests phase (ctest -L gpu, dsv4 verify 1000 steps, the captures)
# when more than 120 s are left, then its sanitizers without the 200-replay step-graph tests
# (trials change unchecked kernels; graph replays launch checked ones) when more than 90 s are
# still left; each phase's limit is the time left then. CHECKS=tests stops after the tests.
# Writes OUT/t.log, OUT/s.log and OUT/chk.tgz (chk-all/tests, chk-all/sanitizers: each phase's
# summary.txt and logs.tar.gz); prints "tests rc=N at S s" and "sanitizers rc=N at S s", S
# counted from the call's start (ELAPSED s before this script began).
# Usage: [CUDA_FLAGS=...] [CHECKS=tests] scripts/gpu_trial_checks.sh OUT BUILD_DIR LEFT ELAPSED
set -uo pipefail
out=${1:?usage: gpu_trial_checks.sh OUT BUILD_DIR LEFT ELAPSED}
build=${2:?usage: gpu_trial_checks.sh OUT BUILD_DIR LEFT ELAPSED}
budget=${3:?usage: gpu_trial_checks.sh OUT BUILD_DIR LEFT ELAPSED}
elapsed=${4:?usage: gpu_trial_checks.sh OUT BUILD_DIR LEFT ELAPSED}
cd "$(dirname "$0")/.." || exit 2
left() { echo $((budget - SECONDS)); }
mkdir -p "$out/chk-all"
if [ "$(left)" -gt 120 ]; then
  BUILD_DIR=$build ARCHIVE=1 PHASES=tests STAGE_TIMEOUT=$(($(left) - 20)) \
    scripts/gpu_check.sh "$out/chk" 1000 > "$out/t.log" 2>&1
  echo "tests rc=$? at $((elapsed + SECONDS)) s"
  mv "$out/chk" "$out/chk-all/tests"
fi
if [ "${CHECKS:-all}" != tests ] && [ "$(left)" -gt 90 ]; then
  BUILD_DIR=$build ARCHIVE=1 PHASES=sanitizers SANITIZE_REPLAYS=0 SANITIZER_TIMEOUT=$(($(left) - 15)) \
    scripts/gpu_check.sh "$out/chk" 100 > "$out/s.log" 2>&1
  echo "sanitizers rc=$? at $((elapsed + SECONDS)) s"
  mv "$out/chk" "$out/chk-all/sanitizers"
fi
tar -C "$out" -czf "$out/chk.tgz" chk-all && rm -rf "$out/chk-all"
