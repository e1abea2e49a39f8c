#!/usr/bin/env bash
# Kernel tuning run on a CUDA machine: builds the optimized tests + kernel_bench (sm_90), runs
# their CUDA instances, then kernel_bench --shape_sweep over the issue-8 target cases (every compiled launch
# shape, each checked against the reference first) plus the launch floors, and an Nsight
# Compute profile of the policy's kernel on C4A prefill 8K. Logs and JSON go to OUTDIR.
#   DEPS=.deps/root scripts/gpu_sweep.sh OUTDIR
set -uo pipefail
out=${1:?usage: gpu_sweep.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit
# shellcheck source=scripts/deps_args.sh
. scripts/deps_args.sh
deps_from_env
{ nvidia-smi; nvcc --version; } > "$out/env.txt" 2>&1
{ cmake -S . -B build-sweep -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${deps_args[@]}" &&
  cmake --build build-sweep -j "$(nproc)" --target optimized_tests kernel_bench; } > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }
echo "== build ok"
timeout 300 ./build-sweep/tests/optimized_tests --gtest_filter='Cuda*' > "$out/gpu_tests.log" 2>&1
echo "== optimized_tests (CUDA) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED' "$out/gpu_tests.log" | head -5
timeout 240 ./build-sweep/bench/kernel_bench --backends=cuda --shape_sweep \
  --benchmark_filter='cuda/(shape|launch_floor|copy_bw|kernel/(flash/(SWA-only|C4A|C128A)|pro/C4A)/(prefill1K|prefill8K|prefill8K_ctx120K|decode64_ctx8K)/)' \
  --benchmark_out="$out/sweep.json" --benchmark_out_format=json > "$out/sweep.txt" 2>&1
echo "== sweep rc=$?"
timeout 60 ./build-sweep/bench/kernel_bench --backends=cuda --warm_l2 \
  --benchmark_filter='cuda/kernel/(flash/(SWA-only|C4A|C128A)|pro/C4A)/(prefill8K|prefill8K_ctx120K|decode64_ctx8K)/' \
  --benchmark_out="$out/warm.json" --benchmark_out_format=json > "$out/warm.txt" 2>&1
echo "== warm-L2 policy builds (no flush) rc=$?"; python3 bench/summarize_sweep.py "$out/warm.json" | grep policy
grep -E "ERROR|error" "$out/sweep.txt" | head -5
for c in flash/C4A/prefill8K flash/SWA-only/decode64_ctx8K; do
  f="$out/ncu_$(echo "$c" | tr / _).txt"
  timeout 120 ncu --clock-control none -k 'regex:(mixed_sparse_indices_kernel|prefill_rows_kernel|decode_chunk_kernel)' -s 3 -c 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    ./build-sweep/bench/kernel_bench --backends=cuda --benchmark_filter="cuda/kernel/$c/" > "$f" 2>&1
  echo "== ncu $c rc=$?"
  grep -E "Duration|DRAM Throughput|inst_executed|dram__bytes|Registers Per|Achieved Occ|Grid Size|Block Size" "$f" | tr -s ' ' | tr '\n' ';'
  echo
done
python3 bench/summarize_sweep.py "$out/sweep.json"
