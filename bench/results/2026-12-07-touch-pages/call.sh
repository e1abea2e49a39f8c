#!/usr/bin/env bash
# One device call (prepared in the fifty-third session, run in the fifty-fourth: README.md): is
# the peer's lead inside the kernel on C128A after 120K (../2026-12-07-kernel-trace/: ours' kernel
# 0.25-0.32 us longer in run_peer.py's loop, the same length in Nsight's replay) a matter of
# address translation? The loop reads 512 MiB before each call, which may push the call's pages
# out of the GPU's TLBs; ncu's replay does not. run_peer.py --ours --kernel-trace on a side
# stream, then the same with --touch-pages (one word of every 2 MiB page of the call's inputs and
# outputs read after the flush: translations warm, data cold), then without again; kernel_bench
# next. Last (added in the fifty-fourth session), Nsight Compute of the same build with five timed
# launches each of ours (planned and unplanned) and of the peer's engine kernel (gpu_profile.sh
# NCU_LAUNCHES=5 PEER=1): the Nsight equality of 2026-12-07-h100-c128a-peer-ncu was one launch of
# each.
#   OUT=$OUT bash bench/results/2026-12-07-touch-pages/call.sh      (carry [".deps", ".whl"])
# Comes back: gpu.txt, call.log, touch.tgz (run_peer JSON and logs, kernel_bench JSON, build
# logs), profile.log, ncu.tar.gz (the reports as text and ncu's logs; no .ncu-rep, for size).
set -uo pipefail
out=${OUT:?}
start=$SECONDS
cd "$(dirname "$0")/../../.." || exit 2
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
t=$out/t
mkdir -p "$t"
log() { echo "$1 at $((SECONDS - start)) s" >> "$out/call.log"; }
export DEPS=$PWD/.deps
# shellcheck source=scripts/deps_args.sh
. scripts/deps_args.sh
deps_from_env
./scripts/python_env.sh > "$t/python_env.log" 2>&1; log "python_env rc=$?"
cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DDSV4_PYTHON=ON -DPython_EXECUTABLE="$PWD/build-venv/bin/python" "${deps_args[@]}" > "$t/configure.log" 2>&1
log "configure rc=$?"
cmake --build build-py -j "$(nproc)" --target _core dsv4_indices_package bench_inputs kernel_bench > "$t/build.log" 2>&1
log "build rc=$?"
export PYTHONPATH=$PWD/build-py/python
keys='flash/C128A/prefill8K_ctx120K$|flash/SWA-only/decode64_ctx8K$|flash/C4A/prefill8K$'
build-py/bench/bench_inputs --out /tmp/pi --filter "$keys" > "$t/bench_inputs.log" 2>&1; log "bench_inputs rc=$?"
n=0
for mode in plain touch plain touch; do
  n=$((n + 1)); extra=(); [ $mode = touch ] && extra=(--touch-pages)
  timeout 150 python3 bench/peer/run_peer.py --inputs /tmp/pi --out "$t/peer_${n}_$mode" --ours --kernel-trace \
    --side-stream "${extra[@]}" > "$t/peer_${n}_$mode.log" 2>&1
  log "run_peer $n $mode rc=$?"
done
timeout 100 build-py/bench/kernel_bench --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
  --benchmark_filter='cuda/(launch_floor/empty_kernel/|kernel(_planned)?/flash/(C128A/prefill8K_ctx120K|SWA-only/decode64_ctx8K|C4A/prefill8K)/)' \
  --benchmark_out="$t/kernel_bench.json" --benchmark_out_format=json > "$t/kernel_bench.log" 2>&1
log "kernel_bench rc=$?"
for f in "$t"/peer_*.log; do echo "== $(basename "$f")"; grep -h "traced\|ours in this loop\|Error\|error" "$f" | cut -c1-330; done >> "$out/call.log"
(cd "$out" && tar czf touch.tgz t && rm -rf t)
prof=/tmp/ncu-c128a
NCU_LAUNCHES=5 PEER=1 BUILD_DIR=build-py timeout 300 scripts/gpu_profile.sh "$prof" \
  kernel/flash/C128A/prefill8K_ctx120K kernel_planned/flash/C128A/prefill8K_ctx120K > "$out/profile.log" 2>&1
log "profile rc=$?"
(cd "$prof" && rm -f ./*.ncu-rep && tar czf "$out/ncu.tar.gz" .)
