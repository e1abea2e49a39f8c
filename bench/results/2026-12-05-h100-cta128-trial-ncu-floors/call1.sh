# Trial: 128-thread CTAs (DSV4_CTA_THREADS=128) against 256, 4 rounds alternating; then Nsight
# Compute metrics of our planned C4A / C128A 8K builds beside their 2-hop chain floors and the
# C4A byte floor (SM-active cycles against elapsed: where a build's time goes idle).
set -u
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
F='cuda/(kernel|kernel_planned)/(flash|pro)/(C4A|C128A|SWA-only)/(prefill8K|prefill8K_ctx120K)/|cuda/kernel/flash/(C4A|SWA-only)/decode64_ctx8K/'
DEPS=$PWD/.deps ROUNDS=4 REPS=3 TIMEOUT=100 ARCHIVE=1 scripts/gpu_trial.sh $OUT/t "$F" base cta128:-DDSV4_CTA_THREADS=128 2>&1 | tail -45
exe=build-trial-base/bench/kernel_bench
M=gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__inst_executed.sum
mkdir -p $OUT/ncu
for c in kernel_planned/flash/C4A/prefill8K kernel_planned/flash/C128A/prefill8K chain_floor/2/flash/C4A/prefill8K chain_floor/2/flash/C128A/prefill8K byte_floor/flash/C4A/prefill8K; do
  n=$(echo $c | tr / _)
  case $c in
    kernel*) k='regex:prefill_rows_kernel'; s=6; cnt=1;;
    *) k='regex:(chained|streaming)_bytes_kernel'; s=6; cnt=6;;
  esac
  timeout 150 ncu --clock-control none --csv --log-file $OUT/ncu/$n.csv --metrics $M -k "$k" -s $s -c $cnt \
    $exe --backends=cuda --benchmark_filter="^cuda/$c/" > $OUT/ncu/$n.app.log 2>&1
  echo "== ncu $c rc=$?"
  python3 - $OUT/ncu/$n.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print("  no rows"); sys.exit()
h = rows[0]; iid, im, iv = h.index("ID"), h.index("Metric Name"), h.index("Metric Value")
by = {}
for r in rows[1:]: by.setdefault(r[iid], {})[r[im]] = r[iv].replace(",", "")
for i, m in by.items():
    f = lambda k: float(m.get(k, "nan"))
    el = f("gpc__cycles_elapsed.max")
    print(f"  id {i}: {f('gpu__time_duration.sum')/1e3:.2f} us grid {m.get('launch__grid_size')}x{m.get('launch__block_size')} regs {m.get('launch__registers_per_thread')}"
          f" | SM active avg/min/max {f('sm__cycles_active.avg')/el:.2f}/{f('sm__cycles_active.min')/el:.2f}/{f('sm__cycles_active.max')/el:.2f} of {el:.0f} cyc"
          f" | L2 {f('lts__throughput.avg.pct_of_peak_sustained_elapsed'):.1f}% {f('lts__t_bytes.sum')/1e6:.1f} MB | DRAM {f('dram__throughput.avg.pct_of_peak_sustained_elapsed'):.1f}% r {f('dram__bytes_read.sum')/1e6:.1f} w {f('dram__bytes_write.sum')/1e6:.1f} MB"
          f" | occ {f('sm__warps_active.avg.pct_of_peak_sustained_active'):.1f}% inst {f('smsp__inst_executed.sum')/1e6:.2f} M")
PY
done
tar czf $OUT/ncu.tgz -C $OUT ncu && rm -rf $OUT/ncu
