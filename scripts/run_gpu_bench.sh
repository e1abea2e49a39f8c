#!/usr/bin/env bash
# The GPU benchmark run (issues 3 §4 and 5), for an H200 host:
#   scripts/run_gpu_bench.sh OUTDIR [COMMIT]
# Configures and builds Release with CUDA (sm_90), then runs kernel_bench, step_bench and
# ttft_report, then the Triton peer on the same inputs (bench_inputs exports them into the
# build folder, bench/peer/run_peer.py checks and times the peer), plots the TTFT gains and
# summarises everything into OUTDIR (11 files: nvidia-smi.txt gpu_state.csv kernel_bench.json
# step_bench.json step_bench_no_pdl.json ttft.json ttft.md ttft.png peer_kernel.json
# peer_step.json summary.md). (step_bench times the per-step token plan's A/B itself: its
# .../<step>_no_plan steps.)
# Environment:
#   DEPS       a folder holding usr/include and usr/lib/x86_64-linux-gnu/cmake or usr/share/cmake
#              (headers/configs carried to the device: RapidCheck, nlohmann_json, CLI11 -> CLI11_DIR
#              = DEPS/usr/share/cmake/CLI11, ...); optional
#   BUILD_DIR  build folder (default build-gpu-bench)
#   TTFT_ARGS  extra ttft_report options (e.g. "--background-decodes 0,64")
#   BENCH_TTFT on (default) or off: off skips ttft_report (a device call too short for all)
#   PYTHON     python with matplotlib (default python3)
#   BENCH_BACKEND  cuda (default) or host: host runs the same pipeline on the host backend
#              (CPU timings; for trying the script on a machine without a GPU; the peer then
#              prints SKIPPED)
#   BENCH_TARBALL  a file: every file of OUTDIR and the stage lines (run_gpu_bench_stages.txt)
#              also packed into it (.tgz), for a device call that brings back at most 8 files
#   KERNEL_FILTER, STEP_FILTER, PEER_FILTER  regexes: only those kernel_bench / step_bench
#              benchmarks (--benchmark_filter; "-" skips the stage) and peer configs (run_peer.py
#              --filter); a STEP_FILTER also skips the no-PDL rerun. For a short focused call
#              (e.g. the prefill-8K steps and step graphs only, beside the peer's)
#   BENCH_PEER on (default), off (no peer stages) or only (build, peer stages and summary
#              only: for a second device call when the first ran out of time; put the first
#              run's JSON in OUTDIR beforehand to get the combined summary). The peer needs
#              python with torch + triton; without them it prints SKIPPED and writes nothing.
#              Where that python also imports dsv4_indices (scripts/install_python.sh), our
#              builds are checked and timed in the peer's loop too (run_peer.py --ours).
#   BENCH_PEER_TRACE  on: run_peer.py --kernel-trace as well (each config's calls timed again
#              under torch.profiler: each kernel's own time and the launch gap, for the peer and,
#              with --ours, for ours; summary.md's "each kernel's own time" table). Default off
# Every stage has a time cap and all end within BENCH_DEADLINE_S (default 560 s) + 25 s for
# the plot and summary; a failed stage does not stop the later ones; the exit status says
# whether all succeeded.
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR [COMMIT]" >&2
  exit 2
fi
# Paths given relative to the caller's directory, resolved before moving to the repo root.
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
deps=""
if [ -n "${DEPS:-}" ]; then
  deps=$(cd "$DEPS" && pwd) || { echo "DEPS=$DEPS: no such folder" >&2; exit 2; }
fi
cd "$(dirname "$0")/.." || exit 2
commit=${2:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
build_dir=${BUILD_DIR:-build-gpu-bench}
python=${PYTHON:-python3}
backend=${BENCH_BACKEND:-cuda}
case "$backend" in
  cuda|host) ;;
  *) echo "BENCH_BACKEND=$backend: expected cuda or host" >&2; exit 2 ;;
esac
peer=${BENCH_PEER:-on}
case "$peer" in
  on|off|only) ;;
  *) echo "BENCH_PEER=$peer: expected on, off or only" >&2; exit 2 ;;
esac
t_start=$(date +%s)
declare -a status_lines=()
failed=0

# All stages end by $deadline (seconds since the epoch): the device's 10-minute call limit.
deadline=$(( t_start + ${BENCH_DEADLINE_S:-560} ))

stage() {  # stage NAME CAP_SECONDS COMMAND...: runs with a time cap, records the outcome
  local name=$1 cap=$2
  shift 2
  local t0 left
  t0=$(date +%s)
  left=$(( deadline - t0 ))
  (( left < cap )) && cap=$left
  if (( cap < 5 )); then
    echo "!!! $name: skipped, no time left before the deadline" >&2
    status_lines+=("$name: SKIPPED (deadline)")
    failed=1
    return 124
  fi
  echo "=== $name (cap ${cap}s) ==="
  timeout -k 10 "$cap" "$@"
  local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  local started
  started=$(date -u -d "@$t0" +%H:%M:%S)  # matches gpu_state.csv's timestamps
  if [ $rc -eq 0 ]; then
    status_lines+=("$name: ok (${dt}s, from $started UTC)")
  else
    [ $rc -eq 124 ] && echo "!!! $name: killed after ${cap}s" >&2
    status_lines+=("$name: FAILED rc=$rc (${dt}s, from $started UTC)")
    failed=1
  fi
  return $rc
}

# --- device ---
{ nvidia-smi; echo; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER; } >"$out/nvidia-smi.txt" 2>&1 ||
  echo "warning: nvidia-smi failed (see $out/nvidia-smi.txt)" >&2
head -n 12 "$out/nvidia-smi.txt"
# The GPU's clocks, temperature, power and throttle reasons once a second for the whole run
# (gpu_state.csv), so that a stage slower than the code explains can be laid beside them (one
# full run's decode builds were 0.1-0.6 us slower than a fresh machine's, unexplained).
gpu_state_pid=""
if command -v nvidia-smi >/dev/null; then
  reasons=clocks_event_reasons.active  # clocks_throttle_reasons.active before driver 535
  nvidia-smi --query-gpu=$reasons --format=csv,noheader >/dev/null 2>&1 || reasons=clocks_throttle_reasons.active
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,$reasons \
    --format=csv -l 1 >"$out/gpu_state.csv" 2>&1 &
  gpu_state_pid=$!
  trap 'kill "$gpu_state_pid" 2>/dev/null' EXIT
fi

# --- configure + build (bench targets only) ---
cmake_args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON
            -DCMAKE_CUDA_ARCHITECTURES=90)
command -v ninja >/dev/null && cmake_args+=(-G Ninja)
if [ -n "$deps" ]; then
  # shellcheck source=scripts/deps_args.sh
  . scripts/deps_args.sh
  deps_cmake_args "$deps"
  cmake_args+=("${deps_args[@]}")
fi
mkdir -p "$build_dir"
build_log="$build_dir/run_gpu_bench_build.log"
echo "=== configure + build (log: $build_log) ==="
if ! { stage configure 90 cmake "${cmake_args[@]}" &&
       stage build 300 cmake --build "$build_dir" -j "$(nproc)" \
         --target kernel_bench step_bench ttft_report bench_inputs; } >"$build_log" 2>&1; then
  echo "--- configure/build failed; last lines of $build_log ---" >&2
  tail -n 40 "$build_log" >&2
  printf '  %s\n' "${status_lines[@]}"
  exit 1
fi
bin="$build_dir/bench"

gbench=(--backends="$backend" --benchmark_repetitions=3 --benchmark_display_aggregates_only=true
        --benchmark_out_format=json)
kernel_filter=${KERNEL_FILTER:-}
step_filter=${STEP_FILTER:-}
if [ "$peer" != only ]; then
  [ "$kernel_filter" = - ] ||
    stage kernel_bench 150 "$bin/kernel_bench" "${gbench[@]}" ${kernel_filter:+--benchmark_filter="$kernel_filter"} \
      --benchmark_out="$out/kernel_bench.json"
  # (144 s on the H200 of 2026-12-05's ae704fc run, with the translated step floors)
  [ "$step_filter" = - ] ||
    stage step_bench 200 "$bin/step_bench" "${gbench[@]}" ${step_filter:+--benchmark_filter="$step_filter"} \
      --benchmark_out="$out/step_bench.json"
  # The cached steps again with plain launches: what programmatic dependent launch (the
  # default) gains, same run.
  if [ "$backend" = cuda ] && [ -z "$step_filter" ]; then
    stage step_bench_no_pdl 60 "$bin/step_bench" "${gbench[@]}" --no_programmatic_launch \
      --benchmark_filter=/cached/ --benchmark_out="$out/step_bench_no_pdl.json"
  fi
  # Both stand-ins (busy-wait, streaming) x rest 100/500/2000 us x 3 reps x (the uncached
  # step + the cached one in each of the 3 SPEC §8 modes): ~110 s of stand-in time at the
  # default prompts (~55 s before the modes), the rest is staging; past 240 s no new step is
  # staged and the longest prompts are skipped for every stand-in and mode (ttft.md lists
  # them, measure_seconds says how much of the budget was used). TTFT_ARGS="--modes seed",
  # "--stand-ins busy-wait" or "--reps 2" trims it if a call needs that.
  if [ "${BENCH_TTFT:-on}" = on ]; then
    # shellcheck disable=SC2086  # TTFT_ARGS is a list of options
    stage ttft_report 300 "$bin/ttft_report" --backend "$backend" --out "$out" --commit "$commit" \
      --max-seconds 240 ${TTFT_ARGS:-}
  fi
fi
if [ "$peer" != off ]; then
  # The Triton peer on kernel_bench's and step_bench's exact inputs. The inputs (~1 GB) stay
  # in the build folder, out of OUTDIR; a fresh export so no stale config is timed.
  peer_inputs="$build_dir/peer_inputs"
  # With the Python package installed (scripts/install_python.sh), our builds are timed in the
  # peer's own loop too (run_peer.py --ours).
  peer_args=()
  "$python" -c "import dsv4_indices" >/dev/null 2>&1 && peer_args=(--ours)
  [ "${BENCH_PEER_TRACE:-off}" = on ] && peer_args+=(--kernel-trace)
  rm -rf "$peer_inputs"
  stage bench_inputs 90 "$bin/bench_inputs" --out "$peer_inputs" --step &&
    stage peer 150 "$python" bench/peer/run_peer.py --inputs "$peer_inputs" --out "$out" --step \
      ${PEER_FILTER:+--filter "$PEER_FILTER"} "${peer_args[@]}"
  # run_peer.py exits 0 when it skips (no torch/triton/GPU): say so in the status lines.
  [ -f "$out/peer_kernel.json" ] || status_lines+=("peer: no peer_kernel.json (skipped or failed: see its log)")
fi
deadline=$(( deadline + 25 ))  # plotting and summarising get their own few seconds
if [ -f "$out/ttft.json" ]; then
  stage plot 30 "$python" bench/plot_ttft.py "$out/ttft.json" --out "$out/ttft.png"
fi
# BENCH_PEER=only with no earlier results in OUTDIR: nothing for the summary to join.
if [ "$peer" != only ] || [ -f "$out/kernel_bench.json" ] || [ -f "$out/step_bench.json" ]; then
  stage summary 30 "$python" bench/summarize.py "$out"
fi

[ -z "$gpu_state_pid" ] || { kill "$gpu_state_pid" 2>/dev/null; wait "$gpu_state_pid" 2>/dev/null; }  # before the tarball
echo
echo "=== run_gpu_bench: $(( $(date +%s) - t_start ))s total, backend $backend, commit $commit, results in $out ==="
printf '  %s\n' "${status_lines[@]}"
ls -l "$out"
if [ -n "${BENCH_TARBALL:-}" ]; then
  printf '%s\n' "${status_lines[@]}" > "$out/run_gpu_bench_stages.txt"
  tar czf "$BENCH_TARBALL" -C "$(dirname "$out")" "$(basename "$out")" || failed=1
fi
exit $failed
