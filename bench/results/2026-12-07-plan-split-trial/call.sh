#!/usr/bin/env bash
# Prepared in the fifty-seventh session, not run: any card (gpu.txt names it).
# plan_split.patch (applied here when the tree lacks it; DSV4_PLAN_SPLIT, default 0: main's SASS
# in all 135 kernels) compiles prefill_rows_kernel twice at level 1: for builds with a token plan
# (the plan entry, then the inputs: none of the unplanned row's loads) and for builds without
# (token_to_req and the last request's early metadata, then the inputs). The launch picks by
# token_plan_in. The question: do planned builds pay for the unplanned row's code in one kernel
# (row-metadata-trial/v3: 0.05-0.17 us a build, inside that run's control spread)?
# kernel_bench, all 60 builds, 4 rounds alternating (~160 s with the builds). The decode-only
# and decodes + prefill builds launch the same machine code in both binaries (the split is
# prefill-only): their mean change is the control. If the 15 planned prefill builds gain 0.3 %
# or more beyond the control and the 15 unplanned ones lose at most 0.3 % beyond it, the GPU
# tests phase (dsv4 verify 1000 steps) in split's build folder, until DL. The sanitizers need a
# call of their own (gpu_call.sh sanitizers on the tree that is kept).
#   DL=420 OUT=$OUT bash bench/results/2026-12-07-plan-split-trial/call.sh   (carry [".deps"])
set -uo pipefail
out=${OUT:?}
dl=${DL:-0}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
export DEPS=$PWD/.deps
here=bench/results/2026-12-07-plan-split-trial
grep -q DSV4_PLAN_SPLIT kernels/mixed_sparse_indices.cu || git apply "$here/plan_split.patch" || exit 2
{
  TRIAL_FILTER='^cuda/kernel(_planned)?/' TRIAL_VARIANTS='base split:-DDSV4_PLAN_SPLIT=1' ROUNDS=4 \
    scripts/gpu_call.sh "$out" trial trial
  echo "trial rc=$? at $((SECONDS - start)) s"
} > "$out/call.log" 2>&1
# compare.txt: "name base split" a line (medians). Mean change (split / base - 1, %) of the
# controls (decode-only, decodes + prefill), the planned prefill and the unplanned prefill builds.
read -r control planned unplanned <<< "$(awk '$1 ~ /^cuda\/kernel(_planned)?\// && NF == 3 {
    g = $1 ~ /\/decode/ ? 1 : $1 ~ /^cuda\/kernel_planned\// ? 2 : 3; s[g] += $3 / $2 - 1; n[g]++ }
  END { for (g = 1; g <= 3; ++g) printf "%.2f ", n[g] ? 100 * s[g] / n[g] : 99 }' "$out/trial/compare.txt")"
echo "mean change, split against base: control $control %, planned prefill $planned %," \
  "unplanned prefill $unplanned %" >> "$out/call.log"
awk -v c="$control" -v p="$planned" -v u="$unplanned" 'BEGIN { exit !(p - c <= -0.3 && u - c <= 0.3) }' ||
  { echo "no checks (below the bar)" >> "$out/call.log"; exit 0; }
build=build-trial-$(printf '%s' "-DDSV4_PLAN_SPLIT=1|" | sha1sum | cut -c1-10)  # split's
CHECKS=tests scripts/gpu_trial_checks.sh "$out" "$build" $((dl - (SECONDS - start))) $((SECONDS - start)) \
  >> "$out/call.log"
