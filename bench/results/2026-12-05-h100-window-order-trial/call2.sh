# Trial: desynchronizing the read and write phases of a wave's rows. wm2 / wm3: every other
# block of 4 / 8 rows builds its window (writes only) before its compressed passes (reads);
# il: prefill CTAs alternately from the last (heaviest) and the first (lightest); nwb: groups of 8
# (SWA-only, C128A 8K) read their 4 window chunks' table entries together. 4 rounds.
set -u
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
F='cuda/(kernel|kernel_planned)/(flash|pro)/(C4A|C128A|SWA-only)/(prefill8K|prefill8K_ctx120K)/|cuda/kernel(_planned)?/flash/C4A/decode32_prefill8K/'
DEPS=$PWD/.deps ROUNDS=4 REPS=3 TIMEOUT=100 ARCHIVE=1 scripts/gpu_trial.sh $OUT/t "$F" base wm2:-DDSV4_WINDOW_FIRST_MIX=2 wm3:-DDSV4_WINDOW_FIRST_MIX=3 il:-DDSV4_CTA_ORDER_INTERLEAVED nwb:-DDSV4_NARROW_WINDOW_BATCH 2>&1 | tail -40
