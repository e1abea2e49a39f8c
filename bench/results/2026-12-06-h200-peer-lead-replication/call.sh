#!/usr/bin/env bash
# One device call for an H200 (another card ends it at once; 53 s on the H200 it ran on, build included): ours beside the
# Triton peer, same run, on the two shapes where the peer led on the H200 (C128A after 120K,
# Flash and Pro; the SWA-only decode of 64 at 8K), with Flash C4A 8K (its target sits at the
# lookup floor) and the copy bandwidth and empty kernel for the floors' arithmetic. No trial
# patch: main's kernels. Run with `run`: OUT=$OUT bash bench/results/2026-12-06-h200-peer-lead-replication/call.sh,
# carry [".deps"], kind nvidia-h200. (Its first run, without DEPS, stopped at CMake's configure: the
# carried dependencies are named here now.)
set -uo pipefail
out=${OUT:?}
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv,noheader > "$out/gpu.txt"
grep -q H200 "$out/gpu.txt" || { echo "not an H200: nothing run" > "$out/call.log"; exit 0; }
KERNEL_FILTER='copy_bw|launch_floor/empty_kernel/|/(flash|pro)/C128A/prefill8K_ctx120K/|/flash/SWA-only/decode64_ctx8K/|/flash/C4A/prefill8K/' \
PEER_FILTER='(flash|pro)/C128A/prefill8K_ctx120K$|flash/SWA-only/decode64_ctx8K$|flash/C4A/prefill8K$' \
DEPS=$PWD/.deps STEP_FILTER=- BENCH_TTFT=off BENCH_DEADLINE_S=${BENCH_DEADLINE_S:-250} \
  scripts/gpu_call.sh "$out/b" bench none > "$out/call.log" 2>&1
echo "gpu_call rc=$?" >> "$out/call.log"
