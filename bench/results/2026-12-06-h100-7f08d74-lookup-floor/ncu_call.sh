# Nsight Compute metrics of planned Flash C4A after 120K beside its translated and lookup floors
# (one launch of ours; one of each floor's six shapes), and the same at 8K, on whatever card
# comes. Run from the repository root with OUT set; writes $OUT/gpu.txt, $OUT/ncu.txt,
# $OUT/ncu.tgz. (As run, the parser below lacked the "n/a" guard and printed nothing; the
# README's table was parsed from ncu.tgz's CSVs with the guarded parser.)
set -u
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
. scripts/deps_args.sh
export DEPS=$PWD/.deps; deps_from_env
{ cmake -S . -B build-ncu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${deps_args[@]}" &&
  cmake --build build-ncu -j "$(nproc)" --target kernel_bench; } > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
exe=build-ncu/bench/kernel_bench
M=gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.avg,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__data_pipe_lsu_wavefronts_mem_global.sum,lts__t_sectors_srcunit_tex_op_read.sum
mkdir -p $OUT/ncu
for c in kernel_planned/flash/C4A/prefill8K_ctx120K lookup_floor/flash/C4A/prefill8K_ctx120K translated_floor/flash/C4A/prefill8K_ctx120K kernel_planned/flash/C4A/prefill8K lookup_floor/flash/C4A/prefill8K; do
  n=$(echo $c | tr / _)
  case $c in
    kernel*) k='regex:prefill_rows_kernel'; cnt=1;;
    *) k='regex:chained_bytes_kernel'; cnt=6;;
  esac
  timeout 120 ncu --clock-control none --csv --log-file $OUT/ncu/$n.csv --metrics $M -k "$k" -s 6 -c $cnt \
    $exe --backends=cuda --benchmark_filter="^cuda/$c/" > $OUT/ncu/$n.app.log 2>&1
  echo "== ncu $c rc=$?" | tee -a $OUT/ncu.txt
  python3 - $OUT/ncu/$n.csv <<'PY' | tee -a $OUT/ncu.txt
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print("  no rows"); sys.exit()
h = rows[0]; iid, im, iv = h.index("ID"), h.index("Metric Name"), h.index("Metric Value")
by = {}
for r in rows[1:]: by.setdefault(r[iid], {})[r[im]] = r[iv].replace(",", "")
for i, m in by.items():
    def f(k):  # "n/a" where the card has no such counter (the wavefront count, on an H100)
        try:
            return float(m.get(k, "nan"))
        except ValueError:
            return float("nan")
    el = f("gpc__cycles_elapsed.max")
    print(f"  id {i}: {f('gpu__time_duration.sum')/1e3:.2f} us grid {m.get('launch__grid_size')}x{m.get('launch__block_size')} regs {m.get('launch__registers_per_thread')}"
          f" | SM active {f('sm__cycles_active.avg')/el:.2f} | L2 {f('lts__throughput.avg.pct_of_peak_sustained_elapsed'):.1f}% {f('lts__t_bytes.sum')/1e6:.1f} MB, tex reads {f('lts__t_sectors_srcunit_tex_op_read.sum')*32/1e6:.1f} MB"
          f" | DRAM r {f('dram__bytes_read.sum')/1e6:.1f} w {f('dram__bytes_write.sum')/1e6:.1f} MB | occ {f('sm__warps_active.avg.pct_of_peak_sustained_active'):.1f}% inst {f('smsp__inst_executed.sum')/1e6:.2f} M"
          f" | L1 ld req {f('l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum')/1e6:.2f} M sectors {f('l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum')/1e6:.2f} M hit {f('l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum')/1e6:.2f} M wavefronts {f('l1tex__data_pipe_lsu_wavefronts_mem_global.sum')/1e6:.2f} M")
PY
done
tar czf $OUT/ncu.tgz -C $OUT ncu build.log && rm -rf $OUT/ncu
