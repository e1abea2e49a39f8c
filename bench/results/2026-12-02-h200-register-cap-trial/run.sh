#!/usr/bin/env bash
# Register-cap trial (device call): kernel_bench built with __launch_bounds__ min CTAs per SM
# 4 (the policy's for 2 chunks a pass), 6 and 8, each swept over every group size on the issue-8
# target cases (--shape_sweep, 3 repetitions, each shape checked against the reference first);
# the kernels' registers and spills from cuobjdump. Usage: DEPS=.deps/root run.sh OUTDIR
set -uo pipefail
out=${1:?usage: run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../../.."
. scripts/deps_args.sh
deps_cmake_args "$(cd "${DEPS:-.deps/root}" && pwd)"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
for cap in 4 6 8; do
  { cmake -S . -B "build-cap$cap" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      "-DCMAKE_CUDA_FLAGS=-DDSV4_MIN_CTAS_PER_SM=$cap" "${deps_args[@]}" &&
    cmake --build "build-cap$cap" -j 5 --target kernel_bench; } > "$out/build_cap$cap.log" 2>&1 &
done
wait
for cap in 4 6 8; do
  exe=build-cap$cap/bench/kernel_bench
  [ -x "$exe" ] || { echo "cap $cap: build failed"; tail -20 "$out/build_cap$cap.log"; continue; }
  cuobjdump --dump-resource-usage "$exe" 2>/dev/null | grep -A1 "mixed_sparse_indices_kernel" |
    grep -oE "REG:[0-9]+|STACK:[0-9]+|LOCAL:[0-9]+" | sort | uniq -c > "$out/resources_cap$cap.txt"
  timeout 150 "$exe" --backends=cuda --shape_sweep --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
    --benchmark_filter='cuda/(shape|copy_bw)/' --benchmark_out="$out/sweep_cap$cap.json" \
    --benchmark_out_format=json > "$out/sweep_cap$cap.txt" 2>&1
  echo "cap $cap: sweep rc=$? $(grep -c median "$out/sweep_cap$cap.txt") medians; $(tr '\n' ' ' < "$out/resources_cap$cap.txt")"
done
