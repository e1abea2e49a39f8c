#!/usr/bin/env bash
# The short form of call.sh for a session's last minutes of device time (forty-third session):
# the occupancy question alone, on the two builds it is about, planned. base (main, 16 rows an
# SM), leanall4 (the lean knobs at main's cap), leanall5 (the same code at 20 rows an SM, no
# spill in the default prefill kernel). Builds only kernel_bench; another card than the H200
# ends the call at once.
set -uo pipefail
out=${OUT:?}
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv,noheader > "$out/gpu.txt"
grep -q H200 "$out/gpu.txt" || exit 0
lean='-DDSV4_TRIAL_LEAN_ALL=1 -DDSV4_TRIAL_LEAN_EARLY_LENS=1 -DDSV4_TRIAL_LEAN_WINDOW_FIRST=1'
ARCHIVE=1 ROUNDS=2 REPS=3 TIMEOUT=60 DEPS=$PWD/.deps scripts/gpu_trial.sh "$out/trial" \
  'cuda/kernel_planned/flash/(C4A/prefill8K|C128A/prefill8K_ctx120K)/' \
  base "leanall4:$lean -DDSV4_MIN_CTAS_PER_SM=4" "leanall5:$lean -DDSV4_MIN_CTAS_PER_SM=5" \
  > "$out/trial.log" 2>&1
echo "trial rc=$? at $((SECONDS - start)) s" >> "$out/trial.log"
