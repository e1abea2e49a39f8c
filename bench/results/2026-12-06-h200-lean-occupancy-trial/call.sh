#!/usr/bin/env bash
# One device call (forty-second session), meant for an H200 (another card ends it at once, below): do 20
# rows an SM without spills (lean_all.patch, applied in the working tree for this call) gain on
# the H200, whose bandwidth needs more bytes in flight than the H100's, where they lost
# (../2026-12-06-h100-9d0c1d2-wide-gather-trial/)? Variants: main; the lean knobs at main's cap (4 CTAs: 16 rows an SM) and at
# 5 (20 rows; no spill but in the gathered-lookups kernel, 32 bytes: so main and leanall5 also
# run with --no_gathered_lookups, whose default kernel for C128A after 120K fits 48 registers).
# (main under the 48-register cap, which spills, was dropped from the call for time: capped
# registers with spills lost on the H200 before, ../2026-12-04-h200-register-cap5-trial/.)
# The wide-gather kernel's peer shape too (below). (decnoreq, decode_no_request.patch, ran on an
# H100 and gained nothing: ../2026-12-06-h100-5833f05-decode-no-request/.)
# Then, time permitting, the owed H200 Nsight of Flash C4A 8K beside its lookup floor.
set -uo pipefail
out=${OUT:?}
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv,noheader > "$out/gpu.txt"
if ! grep -q H200 "$out/gpu.txt"; then  # another card: nothing, unless OTHER_CARD=positional asks
  # for the positional C128A trial (its patch applied too; run on two H100s in the 44th session)
  [ "${OTHER_CARD:-}" = positional ] && exec bash bench/results/2026-12-06-positional-c128a-trial/call.sh
  echo "not an H200: nothing run" > "$out/trial.log"; exit 0
fi
lean='-DDSV4_TRIAL_LEAN_ALL=1 -DDSV4_TRIAL_LEAN_EARLY_LENS=1 -DDSV4_TRIAL_LEAN_WINDOW_FIRST=1'
filter='cuda/kernel(_planned)?/(flash/C4A/prefill8K|flash/C128A/prefill8K_ctx120K|pro/C4A/prefill8K)/'
# The wide-gather trial kernel (in lean_all.patch too): the gathered builds (C128A after 120K) in
# the peer's shape, 128 threads a row with the whole row in flight, at 4 and 5 CTAs an SM (no
# spill); ctl4 is that kernel at main's shape, the control for its placement as a kernel apart.
W() { echo "$1:-DDSV4_TRIAL_WIDE_GATHER=$2 -DDSV4_TRIAL_WIDE_CHUNKS=$3 -DDSV4_TRIAL_WIDE_MIN_CTAS=$4 -DDSV4_TRIAL_WIDE_ONE_PASS=$5"; }
ARCHIVE=1 ROUNDS=2 REPS=3 TIMEOUT=120 DEPS=$PWD/.deps scripts/gpu_trial.sh "$out/trial" "$filter" \
  base basenog:::--no_gathered_lookups "leanall4:$lean -DDSV4_MIN_CTAS_PER_SM=4" \
  "leanall5:$lean -DDSV4_MIN_CTAS_PER_SM=5" "leanall5nog:$lean -DDSV4_MIN_CTAS_PER_SM=5::--no_gathered_lookups" \
  "$(W ctl4 64 2 4 0)" "$(W w128c3m4 128 3 4 1)" "$(W w128c3m5 128 3 5 1)" \
  > "$out/trial.log" 2>&1
echo "trial rc=$? at $((SECONDS - start)) s" >> "$out/trial.log"
left=$((${LIMIT:-570} - (SECONDS - start)))  # LIMIT: the call's seconds for trial and profile
if [ "$left" -gt 90 ]; then
  dir=$(grep -l 'CMAKE_CUDA_FLAGS:STRING=$' build-trial-*/CMakeCache.txt | head -1 | xargs dirname)
  ARCHIVE=1 BUILD_DIR=$dir DEPS=$PWD/.deps timeout "$left" scripts/gpu_profile.sh "$out/prof" \
    kernel_planned/flash/C4A/prefill8K lookup_floor/flash/C4A/prefill8K > "$out/profile.log" 2>&1
  echo "gpu_profile rc=$? at $((SECONDS - start)) s" >> "$out/profile.log"
fi
ls -la "$out" "$out"/*/
