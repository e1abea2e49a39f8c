#!/usr/bin/env bash
# Stage-ablation trial (device call, diagnostic): kernel_bench built as is and with one stage
# of the lean C4A prefill row left out (stage_ablation.patch, compile definitions):
#   nolookup         the top-k stored as read, no block-table lookup
#   noload           synthetic indices instead of the top-k stream (lookups and stores kept)
#   nostore          the compressed stores left out (a never-true test keeps the work)
#   noload_nolookup  neither: the row's plan, then its stores
# The variants cannot be exact: their kernel_bench skips the reference check
# (DSV4_TRIAL_UNVERIFIED); base is checked as always. Differences between the variants'
# device times say what each stage adds to the build as timed (L2 flushed).
# Usage: DEPS=.deps/root run.sh OUTDIR
set -uo pipefail
out=${1:?usage: run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../../.."
. scripts/deps_args.sh
deps_cmake_args "$(cd "${DEPS:-.deps/root}" && pwd)"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
variants=(base nolookup noload nostore noload_nolookup)
start=$SECONDS
for v in "${variants[@]}"; do
  cuda=""
  cxx=""
  case $v in
    nolookup) cuda="-DDSV4_TRIAL_NO_LOOKUP=1" ;;
    noload) cuda="-DDSV4_TRIAL_NO_LOAD=1" ;;
    nostore) cuda="-DDSV4_TRIAL_NO_STORE=1" ;;
    noload_nolookup) cuda="-DDSV4_TRIAL_NO_LOAD=1 -DDSV4_TRIAL_NO_LOOKUP=1" ;;
  esac
  [ "$v" != base ] && cxx="-DDSV4_TRIAL_UNVERIFIED=1"
  { cmake -S . -B "build-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      "-DCMAKE_CUDA_FLAGS=$cuda" "-DCMAKE_CXX_FLAGS=$cxx" "${deps_args[@]}" &&
    cmake --build "build-$v" -j 4 --target kernel_bench; } > "$out/build_$v.log" 2>&1 &
done
wait
echo "builds: $((SECONDS - start)) s"
# Alternating variants, twice: drift between the runs shows as a difference between the rounds.
for round in 1 2; do
  for v in "${variants[@]}"; do
    exe=build-$v/bench/kernel_bench
    [ -x "$exe" ] || { echo "$v: build failed"; tail -20 "$out/build_$v.log"; continue; }
    timeout 100 "$exe" --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
      --benchmark_filter='cuda/((kernel|kernel_planned|byte_floor)/[^/]+/C4A/(prefill8K|prefill8K_ctx120K)/|launch_floor/(empty_kernel|dependent_reads_2)/)' \
      --benchmark_out="$out/${v}_$round.json" --benchmark_out_format=json > "$out/${v}_$round.txt" 2>&1
    echo "$v round $round: rc=$? $(grep -c median "$out/${v}_$round.txt") medians, $(grep -c -i error "$out/${v}_$round.txt") error lines"
  done
done
echo "total: $((SECONDS - start)) s"
