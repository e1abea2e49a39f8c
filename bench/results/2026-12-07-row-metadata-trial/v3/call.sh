#!/usr/bin/env bash
# The fifty-seventh session's second trial call, any card (gpu.txt names it): main at 5c394af
# against c3f7dcd's rows, on every build kernel_bench times (decode-only, mixed and prefill,
# unplanned and planned), then the GPU checks of main's kernels.
# ab.patch (applied here to 5c394af's kernels, when the tree lacks it) gives kernels/'s two row
# headers c3f7dcd's rows with the kept change under the trial's guard (DSV4_ROW_METADATA): level
# 0 compiles to c3f7dcd's SASS and level 2 to 5c394af's, in all 135 kernels (scripts/sass_diff.py,
# on the build host). (The call that ran copied the two patched headers, then in ab/, in place.)
# kernel_bench, 3 rounds alternating; then, until DL s from the start, the GPU tests phase
# (dsv4 verify 1000 steps) and the sanitizers without the 200-replay graph tests (the kept
# change touches no checked kernel, the only ones graph replays launch), in main's build folder.
#   DL=500 OUT=$OUT bash bench/results/2026-12-07-row-metadata-trial/v3/call.sh   (carry [".deps"])
set -uo pipefail
out=${OUT:?}
dl=${DL:-500}
start=$SECONDS
cd "$(dirname "$0")/../../../.." || exit 2
export DEPS=$PWD/.deps
here=bench/results/2026-12-07-row-metadata-trial/v3
grep -q DSV4_ROW_METADATA kernels/mixed_sparse_indices_policy.h || git apply "$here/ab.patch" || exit 2
{
  TRIAL_FILTER='^cuda/kernel(_planned)?/' TRIAL_VARIANTS='base:-DDSV4_ROW_METADATA=0 main' ROUNDS=3 \
    scripts/gpu_call.sh "$out" trial trial
  echo "trial rc=$? at $((SECONDS - start)) s"
} > "$out/call.log" 2>&1
build=build-trial-$(printf '%s' "|" | sha1sum | cut -c1-10)  # main's: no compile flags
scripts/gpu_trial_checks.sh "$out" "$build" $((dl - (SECONDS - start))) $((SECONDS - start)) >> "$out/call.log"
