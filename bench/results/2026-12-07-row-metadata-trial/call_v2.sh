#!/usr/bin/env bash
# The second device call (fifty-sixth session, prepared, not run), any card (gpu.txt names it):
# level 2 of row_metadata_v2.patch (applied here when the tree lacks it) against main's rows
# (level 0: main's SASS, all 135 kernels). Level 2: an unprepared prefill row loads the last
# request's metadata at its start, at addresses from the launch arguments (query_start_loc
# [R - 1], [R], seq_lens[R - 1]), before its first inputs; a row of the last request (every row
# of a one-request step, which reads no token_to_req; the prefill after a step's decodes) uses
# it, any other row loads its own as main does. The first call's level 2 (one-request steps
# only) indexed those loads by the row's request register, which a planned row fills from its
# plan entry: the planned builds waited for that entry before their first inputs (+1.5 to
# +5.4 %). kernel_bench, the 30 prefill builds of the first call and the 10 of 32 decodes +
# prefill 8K (each checked against the reference before it is timed), 4 rounds alternating
# (~170 s with the builds).
# DL (s from the start, default 0: the trial only): if the 20 unplanned builds gain 0.8 % or
# more on the mean and the 20 planned ones lose at most 0.5 %, the GPU tests phase (dsv4 verify
# 1000 steps) in early's build folder, then the sanitizers without the 200-replay graph tests
# (level 2 changes 76 unchecked kernels and no checked one, which graphs launch), until DL.
# ONLY=sanitizers: no trial; the whole sanitizer phase of the patched tree (gpu_call.sh
# sanitizers), for a call after one whose sanitizers were cut short.
#   [DL=0] [ONLY=sanitizers] OUT=$OUT bash bench/results/2026-12-07-row-metadata-trial/call_v2.sh
#   (carry [".deps"])
set -uo pipefail
out=${OUT:?}
dl=${DL:-0}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
export DEPS=$PWD/.deps
here=bench/results/2026-12-07-row-metadata-trial
grep -q DSV4_ROW_METADATA kernels/mixed_sparse_indices_policy.h || git apply "$here/row_metadata_v2.patch" || exit 2
grep -q last_seq_len kernels/mixed_sparse_indices_row.h || exit 2
if [ "${ONLY:-}" = sanitizers ]; then
  scripts/gpu_call.sh "$out" sanitizers > "$out/call.log" 2>&1
  echo "sanitizers rc=$? at $((SECONDS - start)) s" >> "$out/call.log"
  exit 0
fi
{
  TRIAL_FILTER='cuda/kernel(_planned)?/(flash|pro)/(C4A|C128A|SWA-only)/(prefill(1K|8K|8K_ctx120K)|decode32_prefill8K)/' \
    TRIAL_VARIANTS='base:-DDSV4_ROW_METADATA=0 early' ROUNDS=4 scripts/gpu_call.sh "$out" trial trial
  echo "trial rc=$? at $((SECONDS - start)) s"
} > "$out/call.log" 2>&1
# compare.txt: a case a line, "name base early" (medians). Mean change (early / base - 1), in %,
# of the unplanned and of the planned builds.
read -r unplanned planned <<< "$(awk '$1 ~ /^cuda\/kernel(_planned)?\// && NF == 3 {
    g = $1 ~ /^cuda\/kernel_planned\// ? 2 : 1; s[g] += $3 / $2 - 1; n[g]++ }
  END { printf "%.2f %.2f", n[1] ? 100 * s[1] / n[1] : 99, n[2] ? 100 * s[2] / n[2] : 99 }' "$out/trial/compare.txt")"
echo "mean change, early against base: unplanned $unplanned %, planned $planned %" >> "$out/call.log"
awk -v u="$unplanned" -v p="$planned" 'BEGIN { exit !(u <= -0.8 && p <= 0.5) }' ||
  { echo "no checks (or below the bar)" >> "$out/call.log"; exit 0; }
build=build-trial-$(printf '%s' "|" | sha1sum | cut -c1-10)  # early's: no compile flags
scripts/gpu_trial_checks.sh "$out" "$build" $((dl - (SECONDS - start))) $((SECONDS - start)) >> "$out/call.log"
