#!/usr/bin/env bash
# Nsight Compute profiles of builds as the builder launches them, whichever kernel the policy
# picks (the group kernel, prefill_rows_kernel for prefill-only builds, decode_chunk_kernel for
# decode-only ones), one timed launch per kernel_bench case, every section (--set full: the
# stall reasons per source line included), clocks left alone. For finding what limits a build
# before changing it. Builds kernel_bench (sm_90) into build-profile (BUILD_DIR).
#   DEPS=.deps/root scripts/gpu_profile.sh OUTDIR [CASE...]
# CASE: a kernel_bench name below cuda/ (default: kernel_planned/flash/C4A/prefill8K
# kernel_planned/flash/C128A/prefill8K_ctx120K kernel/flash/SWA-only/decode64_ctx8K). Writes
# OUTDIR/ncu_<case>.txt (the report) and .ncu-rep (for the Nsight Compute GUI), build.log.
# A floor's case (byte_floor/..., chain_floor/<1|2>/..., translated_floor/..., lookup_floor/...)
# profiles its streaming kernel once in each of its shapes (StreamingBytes::kShapes, in that
# order: the first timed iteration's launches), to set beside the build's profile.
# PEER=1: the Triton peer too, on the same inputs (bench_inputs), each case's build profiled
# the same way beside ours (OUTDIR/ncu_peer_<model>_<kind>_<case>.*): its engine kernel (no
# error count), one timed call after an L2 flush, as run_peer.py times it. Needs python3 with
# torch and triton. ARCHIVE=1: everything packed into OUTDIR/logs.tar.gz, for a device call.
# BUILD_DIR (default build-profile): a Release CUDA build to reuse (e.g. gpu_check.sh's build-gpu).
# NCU_LAUNCHES (default 1): timed launches profiled per build case and per peer build, each its
# own result in the report: more than one sample of a duration (floors keep one of each shape).
set -uo pipefail
launches=${NCU_LAUNCHES:-1}
case $launches in
  [1-9]) ;;
  *) echo "gpu_profile.sh: NCU_LAUNCHES=$launches: expected a whole number from 1 to 9" >&2; exit 2 ;;
esac
out=${1:?usage: gpu_profile.sh OUTDIR [CASE...]}
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(kernel_planned/flash/C4A/prefill8K kernel_planned/flash/C128A/prefill8K_ctx120K
                                 kernel/flash/SWA-only/decode64_ctx8K)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/deps_args.sh
. scripts/deps_args.sh
# shellcheck source=scripts/archive_outputs.sh
. scripts/archive_outputs.sh
deps_from_env
# std::size(StreamingBytes::kShapes), read from its declaration in bench/streaming_floors.h
floor_shapes=$(grep -o 'kShapes\[[0-9]*\]' bench/streaming_floors.h | head -1 | tr -dc 0-9)
[ -n "$floor_shapes" ] || { echo "gpu_profile.sh: no kShapes[N] in bench/streaming_floors.h" >&2; exit 2; }
build=${BUILD_DIR:-build-profile}
{ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${deps_args[@]}" &&
  cmake --build "$build" -j "$(nproc)" --target kernel_bench bench_inputs; } > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }
# The builds' kernels only (not the L2 flush, head-start or plan-writing launches' helpers);
# the first launches of a case check it against the reference and, planned, write its plan:
# skip them and profile one timed launch.
kernels='regex:(mixed_sparse_indices_kernel|prefill_rows_kernel|decode_chunk_kernel|multi_build_kernel)'
# A floor's launches: one warm-up of each shape, then each timed iteration one of each shape.
floor_kernels='regex:(streaming_bytes_kernel|chained_bytes_kernel)'
status=0
summarize() {  # summarize LABEL NAME: the report's headline metrics on one line
  echo "== ncu $1: $(grep -E '^  [_a-zA-Z0-9]+kernel|Duration|Executed Ipc A|Issue Slots Busy|DRAM Throughput|Achieved Occupancy|Registers Per|Memory Throughput|L2 Hit Rate|Warp Cycles Per Issued' \
    "$out/ncu_$2.txt" | tr -s ' ' | tr '\n' ';' | cut -c1-700)"
}
if [ "${PEER:-0}" = 1 ]; then
  ./"$build"/bench/bench_inputs --out "$build"/peer_inputs > "$out/bench_inputs.log" 2>&1 ||
    { echo "bench_inputs failed"; tail -20 "$out/bench_inputs.log"; status=1; }
fi
for c in "${cases[@]}"; do
  name=$(echo "$c" | tr / _)
  case $c in
    byte_floor/* | chain_floor/* | translated_floor/* | lookup_floor/*)
      filter=$floor_kernels skip=$floor_shapes count=$floor_shapes ;;
    *) filter=$kernels skip=6 count=$launches ;;
  esac
  timeout 240 ncu --clock-control none --set full --import-source yes -k "$filter" -s "$skip" -c "$count" \
    -o "$out/ncu_$name" -f ./"$build"/bench/kernel_bench --backends=cuda \
    --benchmark_filter="^cuda/$c/" > "$out/ncu_$name.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || status=1
  ncu --import "$out/ncu_$name.ncu-rep" --page details > "$out/ncu_$name.txt" 2>&1
  summarize "$c rc=$rc" "$name"
  [ "${PEER:-0}" = 1 ] || continue
  # The peer's launches of one config (run_peer.py, --reps R, R = max(2, NCU_LAUNCHES)): its
  # check, its engine kernel's check, 3 warm-up + R timed calls counting errors, 3 warm-up +
  # R timed engine calls: skip 8 + R, profile NCU_LAUNCHES of the engine's timed calls.
  key=${c#*/}
  peer_name="peer_$(echo "$key" | tr / _)"
  [ -f "$out/ncu_$peer_name.ncu-rep" ] && continue  # planned and unplanned: one peer build
  peer_reps=$(( launches > 2 ? launches : 2 ))
  timeout 240 ncu --clock-control none --set full --import-source yes -k 'regex:_mixed_sparse_indices_kernel' \
    -s $((8 + peer_reps)) -c "$launches" -o "$out/ncu_$peer_name" -f python3 bench/peer/run_peer.py \
    --inputs "$build"/peer_inputs --out "$out/peer_run" --filter "^$key\$" --reps "$peer_reps" > "$out/ncu_$peer_name.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || status=1
  ncu --import "$out/ncu_$peer_name.ncu-rep" --page details > "$out/ncu_$peer_name.txt" 2>&1
  summarize "peer $key rc=$rc" "$peer_name"
done
rm -rf "$out/peer_run"  # run_peer.py's timings of 2 calls under ncu: not results
archive_outputs "$out"  # ARCHIVE=1: reports, logs and .ncu-rep files in logs.tar.gz
exit $status
