#!/usr/bin/env bash
# One device call (forty-second session): (1) what fetching a build's code from DRAM costs it,
# as a same-binary A/B: kernel_bench as always against kernel_bench --warm_code (the same
# kernel run on a 64-row step staged apart after each flush, so that the timed build finds its
# code in the L2 and none of its data), beside the same for a kernel of less code
# (DSV4_TRIAL_COMPACT_PASSES: one copy of each pass's code, 12-13 KB against 16.8); (2) Nsight of ours, its floors and the peer, with the
# raw stall metrics (instruction fetch among them) and each kernel's code size. On an H200 (2)
# is also the owed Nsight of Flash C4A 8K beside its lookup floor.
set -uo pipefail
out=${OUT:?}
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv,noheader > "$out/gpu.txt"
filter='cuda/kernel(_planned)?/(flash/(C4A|C128A)/prefill8K(_ctx120K)?|pro/C4A/prefill8K)/'
ARCHIVE=1 ROUNDS=2 REPS=3 TIMEOUT=120 DEPS=$PWD/.deps scripts/gpu_trial.sh "$out/trial" "$filter" \
  base warm:::--warm_code compact:-DDSV4_TRIAL_COMPACT_PASSES=1 compactwarm:-DDSV4_TRIAL_COMPACT_PASSES=1::--warm_code \
  > "$out/trial.log" 2>&1
echo "trial rc=$? at $((SECONDS - start)) s" >> "$out/trial.log"
dir=$(grep -l 'CMAKE_CUDA_FLAGS:STRING=$' build-trial-*/CMakeCache.txt | head -1 | xargs dirname)
cases=(kernel_planned/flash/C4A/prefill8K lookup_floor/flash/C4A/prefill8K
       kernel_planned/flash/C128A/prefill8K_ctx120K translated_floor/flash/C128A/prefill8K_ctx120K)
prof=/tmp/prof
BUILD_DIR=$dir PEER=1 DEPS=$PWD/.deps timeout $((560 - (SECONDS - start))) \
  scripts/gpu_profile.sh "$prof" "${cases[@]}" > "$out/profile.log" 2>&1
echo "gpu_profile rc=$? at $((SECONDS - start)) s" >> "$out/profile.log"
for r in "$prof"/*.ncu-rep; do
  [ -f "$r" ] || continue
  n=$(basename "$r" .ncu-rep)
  ncu --import "$r" --page raw > "$prof/$n.raw.txt" 2>&1
  grep -E "stall|pcsamp|icc|inst_executed |gpu__time_duration|launch__registers|launch__grid_size|lts__t_sectors |dram__bytes" \
    "$prof/$n.raw.txt" | sed "s|^|$n: |" >> "$out/raw_metrics.txt"
done
# The peer's cubins from Triton's cache, and ours from the build: instructions per kernel.
for c in $(find ~/.triton/cache -name '*.cubin' 2>/dev/null); do
  echo "$(cuobjdump -sass "$c" 2>/dev/null | grep -cE '/\*[0-9a-f]{4}\*/') $c" >> "$out/code_size.txt"
done
cuobjdump -sass "$dir/bench/kernel_bench" 2>/dev/null |
  awk '/Function :/{name=$3} /\/\*[0-9a-f]{4}\*\//{n[name]++} END{for (k in n) print n[k], k}' |
  grep -E 'prefill_rows|streaming_bytes|chained_bytes' | c++filt >> "$out/code_size.txt"
tar czf "$out/prof.tgz" --exclude='*.ncu-rep' -C "$prof" . 2>/dev/null
echo "total $((SECONDS - start)) s" >> "$out/profile.log"
ls -la "$out" "$out/trial"
