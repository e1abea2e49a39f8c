# Trial: Flash C4A rows in groups of 16 (one wave of rows, 5 passes), without (g16) and with the narrow-row
# window-first alternation (DSV4_TRIAL_G16_MIX) against main; 2 rounds, the second reversed.
set -u
nvidia-smi --query-gpu=name,driver_version,uuid --format=csv > $OUT/gpu.txt 2>&1; cat $OUT/gpu.txt
DEPS=$PWD/.deps ROUNDS=2 REPS=3 TIMEOUT=40 ARCHIVE=1 scripts/gpu_trial.sh $OUT/t 'cuda/(kernel|kernel_planned)/flash/C4A/prefill8K/|cuda/kernel_planned/flash/C4A/prefill8K_ctx120K/' base g16:-DDSV4_TRIAL_G16 g16mix:-DDSV4_TRIAL_G16_MIX 2>&1 | tail -12
