#!/usr/bin/env bash
# One device call (fifty-third session): how the spin between the L2 flush and a timed build
# (kernel_bench --head_start_us, default 20) changes what the events time. In the flush-size
# probe on an H100 (../2026-12-07-flush-size-probe/), one run at 130 us (the length run_peer.py
# gives the peer: twice its ~40 us host time + 50) timed every case 0.1-0.3 us faster than at
# 20, the empty kernel included, while the flush's size changed nothing. Same binary, one card:
#   b/  scripts/gpu_call.sh bench: kernel_bench at the default 20 us, the peer, summary.md
#   p/  kernel_bench at 20, 60, 130 and 250 us, then 250, 130, 60 and 20 again
#   OUT=$OUT bash bench/results/2026-12-07-head-start-sweep/call.sh      (carry [".deps"])
# Comes back: gpu.txt, call.log, b/bench.tgz, b/bench.log, sweep.tgz (p/: JSON and logs).
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
p=$out/p
mkdir -p "$p"
n=0
for us in 20 60 130 250 250 130 60 20; do
  n=$((n + 1))
  timeout 100 build-gpu-bench/bench/kernel_bench --backends=cuda --benchmark_repetitions=3 \
    --benchmark_display_aggregates_only=true --benchmark_filter="$kf" --head_start_us="$us" \
    --benchmark_out="$p/kb_${n}_h$us.json" --benchmark_out_format=json > "$p/kb_${n}_h$us.log" 2>&1
  echo "kernel_bench run $n, head start $us us: rc=$? at $((SECONDS - start)) s" >> "$out/call.log"
done
(cd "$out" && tar czf sweep.tgz p && rm -rf p)
ls -la "$out" "$out/b" >> "$out/call.log" 2>&1
