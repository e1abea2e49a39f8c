#!/usr/bin/env bash
# session-11 call 1: kernel trial (reverse CTAs, window first, two passes before the plan) + 6e22edf bench paths
set -u
o=$OUT/t; mkdir -p $o
DEPS=.deps/root ROUNDS=2 REPS=3 TIMEOUT=70 scripts/gpu_trial.sh $o \
  'cuda/(kernel_planned/[^/]+/[^/]+/(prefill8K|prefill8K_ctx120K)/|launch_floor/empty_kernel)' \
  base rev:-DDSV4_TRIAL_REVERSE_CTAS win:-DDSV4_TRIAL_WINDOW_FIRST pf2:-DDSV4_TRIAL_PREFETCH2 \
  "all:-DDSV4_TRIAL_REVERSE_CTAS -DDSV4_TRIAL_WINDOW_FIRST -DDSV4_TRIAL_PREFETCH2" > $o/trial.log 2>&1
tail -40 $o/trial.log
cmake --build build-trial-base -j16 --target step_bench > $o/build_step.log 2>&1 || tail -20 $o/build_step.log
timeout 150 build-trial-base/bench/step_bench --backends=cuda \
  --benchmark_filter='cuda/(step_floor/(flash|pro)/prefill8K/|launch_floor/graph/|step/flash/prefill8K/(cached|split)/)' \
  --benchmark_out=$o/step_check.json --benchmark_out_format=json > $o/step_check.txt 2>&1
echo "step_bench rc=$?"; grep -iE "error|skip" $o/step_check.txt | head; tail -25 $o/step_check.txt
cd $OUT && tar czf trial1.tgz t && rm -rf t && ls -la
