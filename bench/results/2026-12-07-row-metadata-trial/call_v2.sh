#!/usr/bin/env bash
# The second device call (fifty-sixth session), any card (gpu.txt names it): level 2 of
# row_metadata_v2.patch (applied here when the tree lacks it), whose early metadata loads take
# request 0's addresses from the launch arguments, against main's rows (level 0). The first
# call's level 2 indexed them by the row's request register, which a planned row fills from its
# plan entry: the planned builds waited for that entry before their first inputs (+1.9 to +5.4 %).
# kernel_bench, the same 30 prefill builds (each checked against the reference before it is
# timed), 4 rounds alternating. No checks: the call is sized for the session's last 480 s.
#   OUT=$OUT bash bench/results/2026-12-07-row-metadata-trial/call_v2.sh     (carry [".deps"])
set -uo pipefail
out=${OUT:?}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
export DEPS=$PWD/.deps
here=bench/results/2026-12-07-row-metadata-trial
grep -q kRowMetadata kernels/mixed_sparse_indices_policy.h || git apply "$here/row_metadata_v2.patch" || exit 2
grep -q 'early_metadata(const MixedSparseIndicesArgs& a)' kernels/mixed_sparse_indices_row.h || exit 2
{
  TRIAL_FILTER='cuda/kernel(_planned)?/(flash|pro)/(C4A|C128A|SWA-only)/prefill(1K|8K|8K_ctx120K)/' \
    TRIAL_VARIANTS='base:-DDSV4_ROW_METADATA=0 early' ROUNDS=4 scripts/gpu_call.sh "$out" trial trial
  echo "trial rc=$? at $((SECONDS - start)) s"
} > "$out/call.log" 2>&1
