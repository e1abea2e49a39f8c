#!/usr/bin/env bash
# One device call (fifty-sixth session), any card (gpu.txt names it): where an unprepared prefill
# row (unchecked, no token plan) loads its request's metadata, by MixedSparseIndicesPolicy::
# kRowMetadata (row_metadata.patch, applied here when the tree lacks it): base = 0 (main's rows),
# known = 1 (one-request steps skip token_to_req: the one-request trial's change), early = 2 (as 1,
# the metadata loaded at the row's start, before the first inputs), chain = 3 (every step:
# token_to_req, then the metadata, before the first inputs). kernel_bench, 30 prefill builds (all
# one request, each checked against the reference before it is timed), 3 rounds alternating. The
# 15 planned builds read the token plan in every variant: the in-call control. Only if early or
# chain gains 0.8 % or more on the 15 unplanned builds' mean: the GPU tests phase (dsv4 verify
# 1000 steps), then the sanitizers without the 200-replay graph tests (graphs run checked
# kernels, unchanged), in the best variant's build folder, until DL seconds from the start.
#   [DL=540] OUT=$OUT bash bench/results/2026-12-07-row-metadata-trial/call.sh     (carry [".deps"])
set -uo pipefail
out=${OUT:?}
dl=${DL:-540}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
export DEPS=$PWD/.deps
here=bench/results/2026-12-07-row-metadata-trial
grep -q kRowMetadata kernels/mixed_sparse_indices_policy.h || git apply "$here/row_metadata.patch" || exit 2
{
  TRIAL_FILTER='cuda/kernel(_planned)?/(flash|pro)/(C4A|C128A|SWA-only)/prefill(1K|8K|8K_ctx120K)/' \
    TRIAL_VARIANTS='base:-DDSV4_ROW_METADATA=0 known:-DDSV4_ROW_METADATA=1 early chain:-DDSV4_ROW_METADATA=3' \
    ROUNDS=3 scripts/gpu_call.sh "$out" trial trial
  echo "trial rc=$? at $((SECONDS - start)) s"
} > "$out/call.log" 2>&1
# compare.txt: a case a line, "name base known early chain" (medians). Mean gain of the unplanned
# builds (1 - variant / base), in %, a variant.
gains=$(awk '$1 ~ /^cuda\/kernel\// && NF >= 3 { for (i = 3; i <= NF; i++) s[i] += 1 - $i / $2; n++; v = NF }
             END { for (i = 3; i <= v; i++) printf "%.2f ", 100 * s[i] / n }' "$out/trial/compare.txt")
echo "unplanned mean gain (known early chain): $gains%" >> "$out/call.log"
read -r _ g_early g_chain <<< "$gains"  # (known: the earlier trial's change, for reference)
best=; flags=
if awk -v a="${g_early:--99}" -v b="${g_chain:--99}" 'BEGIN { exit !(a >= 0.8 && a >= b) }'; then best=early
elif awk -v b="${g_chain:--99}" 'BEGIN { exit !(b >= 0.8) }'; then best=chain; flags=-DDSV4_ROW_METADATA=3; fi
[ -n "$best" ] || { echo "no checks: below 0.8 %" >> "$out/call.log"; exit 0; }
build=build-trial-$(printf '%s' "$flags|" | sha1sum | cut -c1-10)
left=$((dl - (SECONDS - start)))
echo "checks of $best in $build, $left s left" >> "$out/call.log"
CUDA_FLAGS=$flags scripts/gpu_trial_checks.sh "$out" "$build" "$left" $((SECONDS - start)) >> "$out/call.log"
ls -la "$out" "$out/trial" >> "$out/call.log"
