#!/usr/bin/env bash
# Device call 1 (H200, cold): the GPU benchmark run with the peer at 5294f30 (the
# gathered-lookups kernel on by default), then a same-binary A/B of that kernel, rounds
# on/off/off/on. Everything it writes goes to $OUT (at most 8 files come back).
set -u
O=${OUT:?}
{ date -u; nvidia-smi -L; nvidia-smi; } > "$O/gpu.txt" 2>&1
BENCH_DEADLINE_S=420 BENCH_TARBALL=$O/bench.tgz DEPS=$PWD/.deps \
  scripts/run_gpu_bench.sh "$O/bench" 5294f30 > "$O/bench.log" 2>&1
rm -rf "$O/bench"   # packed in bench.tgz
kb=build-gpu-bench/bench/kernel_bench
filter='cuda/kernel(_planned)?/[^/]+/C(4|128)A/(prefill8K|decode32_prefill8K)'
mkdir -p "$O/ab"
for round in on_1 off_1 off_2 on_2; do
  flag=()
  [ "${round%_*}" = off ] && flag=(--no_gathered_lookups)
  timeout 60 "$kb" --backends=cuda "${flag[@]}" --benchmark_repetitions=3 \
    --benchmark_display_aggregates_only=true --benchmark_filter="$filter" \
    --benchmark_out="$O/ab/$round.json" --benchmark_out_format=json > "$O/ab/$round.txt" 2>&1
  echo "$round rc=$?" >> "$O/ab/rounds.txt"
done
python3 bench/compare_ab.py "$O"/ab/off_{1,2}.json -- "$O"/ab/on_{1,2}.json > "$O/ab/compare.txt" 2>&1
tar czf "$O/ab.tgz" -C "$O" ab && rm -rf "$O/ab"
