#!/usr/bin/env bash
# One device call (fiftieth session), on whatever card comes (H200 or H100; gpu.txt names it):
# the flat prefill kernel (flat_prefill.patch: kernels/flat_prefill_rows.h, behind
# DSV4_FLAT_PREFILL_TRIAL; branch trial/flat-prefill) against
# main's group kernels, on the prefill builds of issue 8's targets, planned and not, with the
# lookup floor of each in every binary (the same code in all: a control for drift between
# variants). Every build is checked against the reference before it is timed (kernel_bench).
# Variants: base (main); w1, w2 (1, 2 words a thread: 31, 53 registers, no spill; 4 words, 88
# registers and 2 CTAs an SM, left out for device time);
# w2e (2 words, top-k loaded before the row's plan, up to the input's width).
#   [SHORT=1] [ROUNDS=2] OUT=$OUT bash bench/results/2026-12-07-flat-prefill-trial/call.sh     (carry [".deps"])
set -uo pipefail
out=${OUT:?}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
# The trial kernel (kernels/flat_prefill_rows.h and its launch, behind the define) on the device's
# copy of the tree; main's kernels are unchanged without the define (same SASS, scripts/sass_diff.py).
here=bench/results/2026-12-07-flat-prefill-trial
git apply --check "$here/flat_prefill.patch" 2>/dev/null && git apply "$here/flat_prefill.patch"
[ -f kernels/flat_prefill_rows.h ] || { echo "flat_prefill.patch did not apply" > "$out/trial.log"; exit 2; }
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv,noheader > "$out/gpu.txt"
filter='cuda/(kernel(_planned)?|lookup_floor)/(flash/(C4A|C128A)/prefill8K(_ctx120K)?|flash/SWA-only/prefill8K|pro/C4A/prefill8K)/'
F() { echo "$1:-DDSV4_FLAT_PREFILL_TRIAL=$2${3:+ $3}"; }
variants=(base "$(F w1 1)" "$(F w2 2)" "$(F w2e 2 -DDSV4_FLAT_EARLY_TOPK)")
[ "${SHORT:-0}" = 1 ] && variants=(base "$(F w1 1)" "$(F w2 2)")  # SHORT=1: little device time left
ARCHIVE=1 ROUNDS=${ROUNDS:-2} REPS=3 TIMEOUT=120 DEPS=$PWD/.deps scripts/gpu_trial.sh "$out/trial" "$filter" \
  "${variants[@]}" > "$out/trial.log" 2>&1
echo "trial rc=$? at $((SECONDS - start)) s" >> "$out/trial.log"
ls -la "$out" "$out"/*/ >> "$out/trial.log"
