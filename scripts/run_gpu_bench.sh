#!/usr/bin/env bash
# The GPU benchmark run (issues 3 §4 and 5), for an H200 host:
#   scripts/run_gpu_bench.sh OUTDIR [COMMIT]
# Configures and builds Release with CUDA (sm_90), then runs kernel_bench, step_bench and
# ttft_report, plots the TTFT gains and summarises everything into OUTDIR (7 files:
# nvidia-smi.txt kernel_bench.json step_bench.json ttft.json ttft.md ttft.png summary.md).
# Environment:
#   DEPS       a folder holding usr/include and usr/lib/x86_64-linux-gnu/cmake or usr/share/cmake
#              (headers/configs carried to the device: RapidCheck, nlohmann_json, CLI11 -> CLI11_DIR
#              = DEPS/usr/share/cmake/CLI11, ...); optional
#   BUILD_DIR  build folder (default build-gpu-bench)
#   TTFT_ARGS  extra ttft_report options (e.g. "--background-decodes 0,64")
#   PYTHON     python with matplotlib (default python3)
#   BENCH_BACKEND  cuda (default) or host: host runs the same pipeline on the host backend
#              (CPU timings; for trying the script on a machine without a GPU)
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
  if [ $rc -eq 0 ]; then
    status_lines+=("$name: ok (${dt}s)")
  else
    [ $rc -eq 124 ] && echo "!!! $name: killed after ${cap}s" >&2
    status_lines+=("$name: FAILED rc=$rc (${dt}s)")
    failed=1
  fi
  return $rc
}

# --- device ---
{ nvidia-smi; echo; nvidia-smi -q -d CLOCK,PERFORMANCE,POWER; } >"$out/nvidia-smi.txt" 2>&1 ||
  echo "warning: nvidia-smi failed (see $out/nvidia-smi.txt)" >&2
head -n 12 "$out/nvidia-smi.txt"

# --- configure + build (bench targets only) ---
cmake_args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON
            -DCMAKE_CUDA_ARCHITECTURES=90)
command -v ninja >/dev/null && cmake_args+=(-G Ninja)
if [ -n "$deps" ]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$deps/usr")
  for pkg in nlohmann_json rapidcheck benchmark GTest Eigen3 CLI11; do
    for d in "$deps/usr/lib/x86_64-linux-gnu/cmake/$pkg" "$deps/usr/share/cmake/$pkg" \
             "$deps/usr/share/$pkg/cmake" "$deps/usr/share/$(echo "$pkg" | tr "[:upper:]" "[:lower:]")/cmake"; do
      if ls "$d"/*onfig.cmake >/dev/null 2>&1; then
        cmake_args+=("-D${pkg}_DIR=$d")
        break
      fi
    done
  done
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
mkdir -p "$build_dir"
build_log="$build_dir/run_gpu_bench_build.log"
echo "=== configure + build (log: $build_log) ==="
if ! { stage configure 90 cmake "${cmake_args[@]}" &&
       stage build 300 cmake --build "$build_dir" -j "$(nproc)" \
         --target kernel_bench step_bench ttft_report; } >"$build_log" 2>&1; then
  echo "--- configure/build failed; last lines of $build_log ---" >&2
  tail -n 40 "$build_log" >&2
  printf '  %s\n' "${status_lines[@]}"
  exit 1
fi
bin="$build_dir/bench"

gbench=(--backends="$backend" --benchmark_repetitions=3 --benchmark_display_aggregates_only=true
        --benchmark_out_format=json)
stage kernel_bench 100 "$bin/kernel_bench" "${gbench[@]}" --benchmark_out="$out/kernel_bench.json"
stage step_bench 150 "$bin/step_bench" "${gbench[@]}" --benchmark_out="$out/step_bench.json"
# shellcheck disable=SC2086  # TTFT_ARGS is a list of options
stage ttft_report 180 "$bin/ttft_report" --backend "$backend" --out "$out" --commit "$commit" \
  --max-seconds 140 ${TTFT_ARGS:-}
deadline=$(( deadline + 25 ))  # plotting and summarising get their own few seconds
if [ -f "$out/ttft.json" ]; then
  stage plot 30 "$python" bench/plot_ttft.py "$out/ttft.json" --out "$out/ttft.png"
fi
stage summary 30 "$python" bench/summarize.py "$out"

echo
echo "=== run_gpu_bench: $(( $(date +%s) - t_start ))s total, backend $backend, commit $commit, results in $out ==="
printf '  %s\n' "${status_lines[@]}"
ls -l "$out"
exit $failed
