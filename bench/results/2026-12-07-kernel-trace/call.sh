#!/usr/bin/env bash
# One device call (fifty-third session): each builder's time inside its kernel and around it,
# in ONE loop. The H100 profile of 2026-12-07 put ours and the peer at the same Nsight duration
# on C128A after 120K while events gave ours 0.6-0.7 us more; the flush-size probe and the
# head-start sweep ruled out those two harness differences. Here both builders run in
# run_peer.py's loop (ours through the Python package), and --kernel-trace times each call once
# more under torch.profiler: the events' us beside the kernels' own us (CUPTI) and the gap from
# the head start's end to the first kernel. Default stream, then a side stream. kernel_bench's
# round of the same builds from the same build tree last, for reference.
#   OUT=$OUT bash bench/results/2026-12-07-kernel-trace/call.sh      (carry [".deps", ".whl"])
# Comes back: gpu.txt, call.log, trace.tgz (run_peer JSON and logs, kernel_bench JSON, build logs).
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
for s in default side; do
  extra=(); [ $s = side ] && extra=(--side-stream)
  timeout 200 python3 bench/peer/run_peer.py --inputs /tmp/pi --out "$t/peer_$s" --ours --kernel-trace "${extra[@]}" \
    > "$t/peer_$s.log" 2>&1
  log "run_peer $s rc=$?"
done
timeout 100 build-py/bench/kernel_bench --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
  --benchmark_filter='cuda/(launch_floor/empty_kernel/|kernel(_planned)?/flash/(C128A/prefill8K_ctx120K|SWA-only/decode64_ctx8K|C4A/prefill8K)/)' \
  --benchmark_out="$t/kernel_bench.json" --benchmark_out_format=json > "$t/kernel_bench.log" 2>&1
log "kernel_bench rc=$?"
grep -h "traced\|ours in this loop" "$t"/peer_*.log | cut -c1-400 >> "$out/call.log"
(cd "$out" && tar czf trace.tgz t && rm -rf t)
