#!/usr/bin/env bash
# Top-k L2 prefetch trial (device call): kernel_bench built as is and with DSV4_PREFETCH_TOPK_L2
# (each prefill row's rank 0 issues one cp.async.bulk.prefetch.L2 of the row's top-k past the
# first pass, once the row's plan is known), both timed on the prefill cases that read a top-k,
# plain and planned, 3 repetitions, every build checked against the reference first.
# Usage: DEPS=.deps/root run.sh OUTDIR
set -uo pipefail
out=${1:?usage: run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../../.."
. scripts/deps_args.sh
deps_cmake_args "$(cd "${DEPS:-.deps/root}" && pwd)"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
for v in base prefetch; do
  flags=""
  [ "$v" = prefetch ] && flags="-DDSV4_PREFETCH_TOPK_L2=1"
  { cmake -S . -B "build-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      "-DCMAKE_CUDA_FLAGS=$flags" "${deps_args[@]}" &&
    cmake --build "build-$v" -j 8 --target kernel_bench; } > "$out/build_$v.log" 2>&1 &
done
wait
# Alternating variants, twice: drift between the runs shows as a difference between the rounds.
for round in 1 2; do
  for v in base prefetch; do
    exe=build-$v/bench/kernel_bench
    [ -x "$exe" ] || { echo "$v: build failed"; tail -20 "$out/build_$v.log"; continue; }
    timeout 100 "$exe" --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
      --benchmark_filter='cuda/(kernel|kernel_planned)/[^/]+/(C4A|C128A)/(prefill8K|prefill8K_ctx120K|prefill1K)/|copy_bw' \
      --benchmark_out="$out/${v}_$round.json" --benchmark_out_format=json > "$out/${v}_$round.txt" 2>&1
    echo "$v round $round: rc=$? $(grep -c median "$out/${v}_$round.txt") medians, $(grep -c -i error "$out/${v}_$round.txt") error lines"
  done
done
