#!/usr/bin/env bash
# One-off device trial of the staged-prefill kernel (not committed).
set -uo pipefail
out=${OUT:?}
. scripts/deps_args.sh; deps_cmake_args "$(cd .deps/root && pwd)"
{ nvidia-smi; nvcc --version; } > "$out/env.txt" 2>&1
t0=$(date +%s)
{ cmake -S . -B build-s -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${deps_args[@]}" &&
  cmake --build build-s -j 16 --target optimized_tests kernel_bench; } > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
timeout 200 ./build-s/tests/optimized_tests --gtest_filter='Cuda*' > "$out/gpu_tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|error" "$out/gpu_tests.log" | head -12
timeout 260 ./build-s/bench/kernel_bench --backends=cuda --shape_sweep \
  --benchmark_filter='cuda/(shape/.*/prefill|copy_bw|launch_floor/empty_kernel$|kernel/(flash/(SWA-only|C4A|C128A)|pro/C4A)/(prefill1K|prefill8K|prefill8K_ctx120K)/)' \
  --benchmark_out="$out/sweep.json" --benchmark_out_format=json > "$out/sweep.txt" 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"; grep -iE "error|mismatch" "$out/sweep.txt" | head -5
python3 bench/summarize_sweep.py "$out/sweep.json"
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 ./build-s/tests/optimized_tests \
    --gtest_filter='CudaBuilder.EveryStagedPrefillShapeMatchesTheReference' > "$out/$tool.log" 2>&1
  echo "$tool rc=$? $(( $(date +%s) - t0 )) s: $(tail -2 "$out/$tool.log" | tr '\n' ' ')"
done
