#!/usr/bin/env bash
# On a CUDA machine with torch: the Python package's checks and host-time numbers in one go.
# Builds the package in the CMake tree (CUDA, sm_90, -DDSV4_PYTHON=ON, the stubs too) with the
# README's environment (scripts/python_env.sh: build-venv on python3, tools from .whl/ when
# carried), then: pytest python/tests (torch CUDA), python/examples/engine_step.py --check,
# python/bench/bench_binding.py RUNS times, and kernel_bench's launch floors and decode builds
# (the host cost of a bare launch and of a C++ build() on this same machine, which a Python
# build() call includes). Logs, JSON and summary.txt go to OUTDIR.
# Usage: [DEPS=.deps/root] [RUNS=2] [CUDA_FLAGS=...] [BUILD_DIR=build-py] scripts/gpu_python.sh OUTDIR [COMMIT]
# CUDA_FLAGS: compile definitions of a trial for the CUDA sources (e.g. -DDSV4_SOME_TRIAL=1),
# built in its own BUILD_DIR so that a base run and a trial run can follow each other.
# (COMMIT names the tree in the logs: the device copy's .git may be stale.)
set -uo pipefail
out=${1:?usage: gpu_python.sh OUTDIR [COMMIT]}
commit=${2:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
runs=${RUNS:-2}
cd "$(dirname "$0")/.." || exit
mkdir -p "$out"
rm -f "$out/summary.txt"
# shellcheck source=scripts/deps_args.sh
. scripts/deps_args.sh
deps_from_env
status=0
step() { echo "== $1: $2 ($3 s)" | tee -a "$out/summary.txt"; }
run_logged() {  # run_logged NAME LIMIT_S COMMAND...: log $out/NAME.log, verdict in summary.txt
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  if [ "$rc" = 0 ]; then step "$name" ok $((SECONDS - start)); else status=1; step "$name" "FAILED rc=$rc" $((SECONDS - start)); fi
  return $rc
}
{ echo "commit $commit${CUDA_FLAGS:+ with CUDA_FLAGS=$CUDA_FLAGS}"; date -u; nvidia-smi; nvcc --version; python3 -c 'import torch; print("torch", torch.__version__)'; } \
  > "$out/env.txt" 2>&1
run_logged python_env 120 ./scripts/python_env.sh || exit 1
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
build=${BUILD_DIR:-build-py}
run_logged configure 120 cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_CUDA_FLAGS=${CUDA_FLAGS:-}" -DDSV4_PYTHON=ON \
  -DPython_EXECUTABLE="$PWD/build-venv/bin/python" "${deps_args[@]}" ||
  { tail -40 "$out/configure.log"; exit 1; }
# The package (module, .py copies, stubs) and kernel_bench only: the rest of the tree is not run here.
run_logged build 400 cmake --build "$build" -j "$(nproc)" --target _core dsv4_indices_package dsv4_indices_stub \
  kernel_bench || { tail -40 "$out/build.log"; exit 1; }
export PYTHONPATH=$PWD/$build/python
# The tests and benchmarks run on python3 itself (the one with torch and numpy: an offline
# H200 venv does not see its numpy), with pytest from .whl/ when it lacks it.
py=${PYTHON:-python3}
"$py" -c 'import pytest' 2>/dev/null || "$py" -m pip install -q --no-index --find-links .whl pytest ||
  "$py" -m pip install -q --break-system-packages --no-index --find-links .whl pytest
run_logged pytest 300 "$py" -m pytest python/tests -q -rs
run_logged engine_step 120 "$py" python/examples/engine_step.py --check
# Results named by the card (h200, h100, ...): python/bench/results/<gpu>-<commit>-<run>.*
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -o -i -E 'h[0-9]+' | head -1 |
  tr '[:upper:]' '[:lower:]')
gpu=${gpu:-gpu}
for ((i = 1; i <= runs; ++i)); do
  run_logged "bench_binding_$i" 300 "$py" python/bench/bench_binding.py --json "$out/$gpu-$commit-$i.json"
  cp "$out/bench_binding_$i.log" "$out/$gpu-$commit-$i.txt"
done
run_logged kernel_bench_host 120 "./$build/bench/kernel_bench" --backends=cuda \
  --benchmark_filter='cuda/(launch_floor/empty_kernel|kernel/flash/(SWA-only|C4A)/decode64_ctx8K/)' \
  --benchmark_repetitions=3 --benchmark_out="$out/kernel_bench_host.json" --benchmark_out_format=json
exit $status
