#!/usr/bin/env bash
# One device call, any card (H100 or H200): what a C128A prefill build costs when it makes SPEC
# §6's positional input (local indices 0, 1, ..., n(t) - 1, then -1) instead of reading it.
# positional_c128a.patch applied in the working tree for this call (inert without its define).
# kernel_bench checks every build against the reference before timing it, as always; its C128A
# cases are not in persistent buffers, so the input width is E and the made values are exact.
set -uo pipefail
out=${OUT:?}
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv,noheader > "$out/gpu.txt"
ARCHIVE=1 ROUNDS=3 REPS=3 TIMEOUT=90 DEPS=$PWD/.deps scripts/gpu_trial.sh "$out/trial" \
  'cuda/(kernel|kernel_planned|byte_floor)/(flash|pro)/C128A/prefill8K(_ctx120K)?/' \
  base pos:-DDSV4_TRIAL_POSITIONAL_C128A=1 > "$out/trial.log" 2>&1
echo "trial rc=$? at $((SECONDS - start)) s" >> "$out/trial.log"
ls -la "$out" "$out"/*/
