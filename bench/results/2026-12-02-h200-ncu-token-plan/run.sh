#!/usr/bin/env bash
# Nsight Compute of the C4A prefill-8K build with and without the token plan (device call):
# kernel_bench built with -lineinfo, one launch of the policy's kernel profiled per variant
# (--set full, clocks not locked, L2 flushed by the benchmark before each build as timed), the
# details page and the per-SASS source page (warp stall samples per instruction) as text.
# Usage: DEPS=.deps/root run.sh OUTDIR
set -uo pipefail
out=${1:?usage: run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../../.."
. scripts/deps_args.sh
deps_cmake_args "$(cd "${DEPS:-.deps/root}" && pwd)"
{ cmake -S . -B build-prof -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_FLAGS=-lineinfo "${deps_args[@]}" &&
  cmake --build build-prof -j "$(nproc)" --target kernel_bench; } > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
for v in kernel kernel_planned; do
  for c in flash/C4A/prefill8K flash/SWA-only/prefill8K; do
    name="${v}_$(echo "$c" | tr / _)"
    # -s 8: past the verify build and the plan's writer, into the timed iterations
    timeout 150 ncu --set full --import-source yes --clock-control none -k regex:mixed_sparse_indices_kernel -s 8 -c 1 \
      -o "$out/$name" -f ./build-prof/bench/kernel_bench --backends=cuda --benchmark_filter="cuda/$v/$c/" \
      > "$out/${name}_run.log" 2>&1
    echo "$name: ncu rc=$?"
    ncu -i "$out/$name.ncu-rep" --page details > "$out/${name}_details.txt" 2>&1
    ncu -i "$out/$name.ncu-rep" --page source --print-source sass --csv > "$out/${name}_sass.csv" 2>&1
    echo "$name: $(grep -E '^ +Duration|Achieved Occupancy|DRAM Throughput' "$out/${name}_details.txt" | tr -s ' ' | tr '\n' ';')"
  done
done
