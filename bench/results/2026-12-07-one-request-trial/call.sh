#!/usr/bin/env bash
# One device call (fifty-sixth session), any card (gpu.txt names it): one-request steps without
# token_to_req (MixedSparseIndicesPolicy::kOneRequestKnown) against main's rows, which read it
# (base: -DDSV4_ALWAYS_READ_TOKEN_TO_REQ=1, main's SASS). kernel_bench, 30 prefill builds (all
# one request, each checked against the reference before it is timed), 3 rounds alternating.
# The 15 planned builds read the token plan in both variants: the in-call control. Only if the
# 15 unplanned builds gain 0.8 % or more on the mean: the GPU tests phase (dsv4 verify 1000
# steps), then the sanitizers without the 200-replay graph tests (graphs run checked kernels,
# unchanged), in the known variant's build folder, until DL seconds from the start.
#   [DL=480] OUT=$OUT bash bench/results/2026-12-07-one-request-trial/call.sh     (carry [".deps"])
set -uo pipefail
out=${OUT:?}
dl=${DL:-480}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
export DEPS=$PWD/.deps
# The change, not kept on main (one_request.patch: commit 28b3ad4's kernels/ and tests/), applied to
# the device's copy of the tree when it is not there already.
here=bench/results/2026-12-07-one-request-trial
grep -q kOneRequestKnown kernels/mixed_sparse_indices_policy.h || git apply "$here/one_request.patch" || exit 2
{
  TRIAL_FILTER='cuda/kernel(_planned)?/(flash|pro)/(C4A|C128A|SWA-only)/prefill(1K|8K|8K_ctx120K)/' \
    TRIAL_VARIANTS='base:-DDSV4_ALWAYS_READ_TOKEN_TO_REQ=1 known' ROUNDS=3 scripts/gpu_call.sh "$out" trial trial
  echo "trial rc=$? at $((SECONDS - start)) s"
} > "$out/call.log" 2>&1
# Mean change of the unplanned builds (known / base - 1), in %.
gain=$(awk '$1 ~ /^cuda\/kernel\// && NF == 3 && !seen[$1]++ { s += $3 / $2 - 1; n++ }
            END { if (n) printf "%.2f", -100 * s / n; else print "none" }' "$out/trial/compare.txt" 2>/dev/null)
echo "unplanned mean gain: ${gain:-none} % (15 builds expected)" >> "$out/call.log"
if [ -z "$gain" ] || [ "$gain" = none ] || awk -v g="$gain" 'BEGIN { exit !(g < 0.8) }'; then
  echo "no checks: below 0.8 %" >> "$out/call.log"
  exit 0
fi
build=$(ls -d build-trial-* | while read -r d; do grep -q 'DSV4_ALWAYS' "$d/CMakeCache.txt" || echo "$d"; done | head -1)
left=$((dl - (SECONDS - start)))
echo "checks in $build, $left s left" >> "$out/call.log"
scripts/gpu_trial_checks.sh "$out" "$build" "$left" $((SECONDS - start)) >> "$out/call.log"
ls -la "$out" "$out/trial" >> "$out/call.log"
