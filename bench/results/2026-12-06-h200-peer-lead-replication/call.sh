#!/usr/bin/env bash
# One device call for an H200 (another card ends it at once unless OTHER_CARDS=bench; a round
# took 53 s there, build included): ours beside the Triton peer, same run, on the two shapes
# where the peer led on the H200 (C128A after 120K, Flash and Pro; the SWA-only decode of 64
# at 8K), with Flash C4A 8K (its target sits at the lookup floor) and the copy bandwidth and
# empty kernel for the floors' arithmetic. No trial patch: main's kernels. Run with `run`:
#   [ROUNDS=2] [OTHER_CARDS=bench] OUT=$OUT bash bench/results/2026-12-06-h200-peer-lead-replication/call.sh
# carry [".deps"], kind nvidia-h200. (Its first run stopped at CMake's configure, no DEPS named;
# scripts/gpu_call.sh now takes the carried .deps when DEPS is unset.)
set -uo pipefail
out=${OUT:?}
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv,noheader > "$out/gpu.txt"
# The card decides through gpu_call.sh's fallback: OTHER_CARDS (default none: each round ends at
# once on a card other than an H200; bench: it runs there too, as an H100 ran it in
# 2026-12-07-h100-peer-lead-rounds/; gpu_call.sh rejects any other value).
other=${OTHER_CARDS:-none}
status=0  # the last failed round's exit status
# ROUNDS (default 1) runs it again into b2/, b3/, ... (the build is reused): the spread within
# one card, beside this folder's b/ run on another. Each round leaves bench.tgz and bench.log
# (its gpu.txt, the same as the call's, removed: at most 8 files come back).
for round in $(seq 1 "${ROUNDS:-1}"); do
  dir=$out/b; [ "$round" = 1 ] || dir=$out/b$round
  KERNEL_FILTER='copy_bw|launch_floor/empty_kernel/|/(flash|pro)/C128A/prefill8K_ctx120K/|/flash/SWA-only/decode64_ctx8K/|/flash/C4A/prefill8K/' \
  PEER_FILTER='(flash|pro)/C128A/prefill8K_ctx120K$|flash/SWA-only/decode64_ctx8K$|flash/C4A/prefill8K$' \
  STEP_FILTER=- BENCH_TTFT=off BENCH_DEADLINE_S=${BENCH_DEADLINE_S:-250} \
    scripts/gpu_call.sh "$dir" bench "$other" >> "$out/call.log" 2>&1
  rc=$?
  echo "round $round: gpu_call rc=$rc" >> "$out/call.log"
  [ "$rc" = 0 ] || status=$rc
  rm -f "$dir/gpu.txt"
done
exit $status
