# Python package checks + binding bench (issue 13), then ours in the peer's loop, default vs side stream
set -u
commit=7992ccc
DEPS=$PWD/.deps RUNS=3 scripts/gpu_python.sh $OUT/py $commit > $OUT/py.log 2>&1
cat $OUT/py/summary.txt
nvidia-smi --query-gpu=name,driver_version,uuid,clocks.sm --format=csv > $OUT/py/gpu.txt
tar czf $OUT/py.tgz -C $OUT py
cmake --build build-py --target bench_inputs -j16 > $OUT/py/bench_inputs_build.log 2>&1
export PYTHONPATH=$PWD/build-py/python
build-py/bench/bench_inputs --out /tmp/pi --filter 'flash/(C128A|SWA-only|C4A)/(prefill8K|prefill8K_ctx120K|decode64_ctx8K)$' > $OUT/py/bench_inputs.log 2>&1
n=0
for s in default side default side; do
  n=$((n + 1)); extra=(); [ $s = side ] && extra=(--side-stream)
  timeout 120 python3 bench/peer/run_peer.py --inputs /tmp/pi --out /tmp/po_$n --ours "${extra[@]}" > $OUT/py/peer_${n}_$s.log 2>&1
  cp /tmp/po_$n/peer_kernel.json $OUT/py/peer_${n}_$s.json
  echo "== run $n, $s stream"; grep -h "ours in this loop" $OUT/py/peer_${n}_$s.log | cut -c1-220
done
build-py/bench/kernel_bench --backends=cuda --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
  --benchmark_filter='cuda/(kernel/flash/(C128A|SWA-only|C4A)/(prefill8K|decode64_ctx8K)|launch_floor/empty_kernel)' \
  > $OUT/py/kernel_bench_same.txt 2>&1
grep -E "_median" $OUT/py/kernel_bench_same.txt | head -20
tar czf $OUT/py.tgz -C $OUT py && rm -rf $OUT/py
