#!/usr/bin/env bash
# One device call (fifty-third session): does the size of the L2 flush before a timed build
# explain why ours spends 1.1-1.4 us outside its kernel's Nsight duration and the peer 0.6?
# kernel_bench reads max(2 x L2, 64 MiB) before each timed build (100 MiB on an H100, 120 on an
# H200); run_peer.py reads 512 MiB, the method issue 8 states. The guess: a flush of only 2 x L2
# leaves some of the previous build's dirty output lines in the L2, and the timed build pays
# for their write-back. Same binary, same inputs, one card:
#   b/     scripts/gpu_call.sh bench: kernel_bench at its default flush, the peer at 512 MiB,
#          summary.md with the peer column (the base round; builds the binaries)
#   p/     kernel_bench again: --l2_flush_mib=512 (B), 512 with --head_start_us=130 (C, the
#          peer's spin is 2 x its host time + 50 us), default (A) and 512 (B) once more, 1024 (D:
#          does 512 leave anything that 1024 removes?); then the peer with its flush at
#          kernel_bench's default size and at 512 again
#   OUT=$OUT bash bench/results/2026-12-07-flush-size-probe/call.sh      (carry [".deps"])
# Comes back: gpu.txt, call.log, b/bench.tgz, b/bench.log, probe.tgz (p/: JSON and logs).
set -uo pipefail
out=${OUT:?}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
kf='copy_bw|launch_floor/empty_kernel/|/flash/C128A/prefill8K_ctx120K/|/flash/SWA-only/decode64_ctx8K/|/(flash|pro)/C4A/prefill8K/'
pf='flash/C128A/prefill8K_ctx120K$|flash/SWA-only/decode64_ctx8K$|(flash|pro)/C4A/prefill8K$'
KERNEL_FILTER=$kf PEER_FILTER=$pf STEP_FILTER=- BENCH_TTFT=off BENCH_DEADLINE_S=300 \
  scripts/gpu_call.sh "$out/b" bench > "$out/call.log" 2>&1
echo "base round rc=$? at $((SECONDS - start)) s" >> "$out/call.log"
cp "$out/b/gpu.txt" "$out/gpu.txt" && rm -f "$out/b/gpu.txt"
bin=build-gpu-bench/bench
p=$out/p
mkdir -p "$p"
kb() {  # kb NAME ARGS...: one kernel_bench run of the probe's filter
  local name=$1
  shift
  timeout 120 "$bin/kernel_bench" --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
    --benchmark_filter="$kf" --benchmark_out="$p/kb_$name.json" --benchmark_out_format=json "$@" > "$p/kb_$name.log" 2>&1
  echo "kernel_bench $name $*: rc=$? at $((SECONDS - start)) s" >> "$out/call.log"
}
kb B1 --l2_flush_mib=512
kb C1 --l2_flush_mib=512 --head_start_us=130
kb A2
kb B2 --l2_flush_mib=512
kb D1 --l2_flush_mib=1024
# The peer with kernel_bench's default flush size (from its own context line), then 512 again.
small=$(python3 -c "import json; print(int(json.load(open('$p/kb_A2.json'))['context']['dsv4_l2_flush_bytes']) >> 20)")
pr() {  # pr NAME MIB
  timeout 150 python3 bench/peer/run_peer.py --inputs build-gpu-bench/peer_inputs --out "$p/peer_$1" \
    --filter "$pf" --l2-flush-mib "$2" > "$p/peer_$1.log" 2>&1
  echo "peer $1 (flush $2 MiB): rc=$? at $((SECONDS - start)) s" >> "$out/call.log"
}
pr small "${small:-120}"
pr 512 512
(cd "$out" && tar czf probe.tgz p && rm -rf p)
ls -la "$out" "$out/b" >> "$out/call.log" 2>&1
