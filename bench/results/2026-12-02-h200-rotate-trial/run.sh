#!/usr/bin/env bash
# Rotated-pass trial (device call): kernel_bench built as is and with DSV4_ROTATE_PASSES (row t
# of the lean prefill path visits its compressed chunks from quarter t % 4 on, so that the
# first passes of all rows, issued together, spread over every address of the top-k instead of
# the first half of every row), both checked against the reference and timed on the prefill
# cases with compressed columns, plain and planned.
# Usage: DEPS=.deps/root run.sh OUTDIR
set -uo pipefail
out=${1:?usage: run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../../.."
. scripts/deps_args.sh
deps_cmake_args "$(cd "${DEPS:-.deps/root}" && pwd)"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
variants=(base rotate)
start=$SECONDS
for v in "${variants[@]}"; do
  cuda=""
  cxx=""
  case $v in
    rotate) cuda="-DDSV4_ROTATE_PASSES=1" ;;
  esac
  { cmake -S . -B "build-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      "-DCMAKE_CUDA_FLAGS=$cuda" "-DCMAKE_CXX_FLAGS=$cxx" "${deps_args[@]}" &&
    cmake --build "build-$v" -j 8 --target kernel_bench; } > "$out/build_$v.log" 2>&1 &
done
wait
echo "builds: $((SECONDS - start)) s"
# Alternating variants, twice: drift between the runs shows as a difference between the rounds.
for round in 1 2; do
  for v in "${variants[@]}"; do
    exe=build-$v/bench/kernel_bench
    [ -x "$exe" ] || { echo "$v: build failed"; tail -20 "$out/build_$v.log"; continue; }
    timeout 100 "$exe" --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
      --benchmark_filter='cuda/((kernel|kernel_planned)/[^/]+/(C4A|C128A)/(prefill|decode32_prefill)|launch_floor/empty_kernel/)' \
      --benchmark_out="$out/${v}_$round.json" --benchmark_out_format=json > "$out/${v}_$round.txt" 2>&1
    echo "$v round $round: rc=$? $(grep -c median "$out/${v}_$round.txt") medians, $(grep -c -i error "$out/${v}_$round.txt") error lines"
  done
done
echo "total: $((SECONDS - start)) s"
