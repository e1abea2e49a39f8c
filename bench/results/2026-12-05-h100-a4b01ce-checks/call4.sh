# GPU checks of a4b01ce (narrow rows alternate window-first): GPU tests, dsv4 verify 2000 steps
# in every mode, the captures, memcheck / racecheck / synccheck over the CUDA tests (the
# 200-replay step-graph tests outside the sanitizers, for time); then the kept kernels timed.
set -u
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
S=$SECONDS
ARCHIVE=1 SANITIZE_REPLAYS=0 STAGE_TIMEOUT=180 SANITIZER_TIMEOUT=250 DEPS=$PWD/.deps scripts/gpu_check.sh $OUT/chk 2000 2>&1 | grep -v "^   " | tail -30
echo "check: $((SECONDS - S)) s"
left=$((575 - (SECONDS - S)))
if [ $left -gt 40 ]; then
  timeout $left build-gpu/bench/kernel_bench --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
    --benchmark_filter='cuda/(kernel|kernel_planned)/(flash|pro)/(C128A|SWA-only)/(prefill8K|prefill1K)/|cuda/kernel_planned/flash/C4A/prefill8K/|cuda/launch_floor/empty' \
    --benchmark_out=$OUT/kernel_bench.json --benchmark_out_format=json > $OUT/kernel_bench.txt 2>&1
  echo "kernel_bench rc=$?"; grep -E "_median" $OUT/kernel_bench.txt | awk '{print $1, $2}'
fi
