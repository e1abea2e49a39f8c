# Trial: the window first for rows in groups of 8 (SWA-only, C128A with short context) only:
# nwf (as main, the window after the plan), nwfb (its 4 chunks' table reads together), nwb
# (batched reads, window last: a rerun), wm2 (every other 4-row block window-first, all kernels:
# a rerun). 4 rounds, the even ones in reverse order.
set -u
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
F='cuda/(kernel|kernel_planned)/(flash|pro)/(C4A|C128A|SWA-only)/(prefill8K|prefill8K_ctx120K|prefill1K)/'
DEPS=$PWD/.deps ROUNDS=4 REPS=3 TIMEOUT=100 ARCHIVE=1 scripts/gpu_trial.sh $OUT/t "$F" base nwf:-DDSV4_NARROW_WINDOW_FIRST nwfb:'-DDSV4_NARROW_WINDOW_FIRST -DDSV4_NARROW_WINDOW_BATCH' nwb:-DDSV4_NARROW_WINDOW_BATCH wm2:-DDSV4_WINDOW_FIRST_MIX=2 2>&1 | grep -v "round" | tail -40
