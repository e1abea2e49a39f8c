#!/usr/bin/env bash
# Rerun of the decode builds (ours twice, the peer between) on a fresh machine.
set -u
. scripts/deps_args.sh; DEPS=.deps/root deps_from_env
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
cmake -S . -B bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${deps_args[@]}" > $OUT/build.log 2>&1 &&
  cmake --build bd -j 16 --target kernel_bench bench_inputs >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "built at $SECONDS s"
F='cuda/kernel/[^/]+/[^/]+/decode(64|256)|cuda/launch_floor/empty_kernel$'
G=(--backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true --benchmark_out_format=json --benchmark_filter="$F")
timeout 30 bd/bench/kernel_bench "${G[@]}" --benchmark_out=$OUT/kernel_bench_1.json > $OUT/kb1.txt 2>&1; echo "kb1 rc=$? at $SECONDS s"
timeout 20 bd/bench/bench_inputs --out /tmp/pi --filter 'decode(64|256)' > $OUT/inputs.txt 2>&1; echo "inputs rc=$?"
timeout 50 python3 bench/peer/run_peer.py --inputs /tmp/pi --out $OUT --filter 'decode(64|256)' > $OUT/peer.txt 2>&1; echo "peer rc=$? at $SECONDS s"
timeout 30 bd/bench/kernel_bench "${G[@]}" --benchmark_out=$OUT/kernel_bench_2.json > $OUT/kb2.txt 2>&1; echo "kb2 rc=$? at $SECONDS s"
grep -E 'decode64_ctx8K|empty' $OUT/kb1.txt | grep median
