#!/usr/bin/env bash
# A kernel trial in one device call: kernel_bench built once per variant (in parallel), then
# run ROUNDS times with the variants alternating (reversed every other round), and
# compared with bench/compare_ab.py against the first variant. A variant is NAME, NAME:CUDA,
# NAME:CUDA:CXX or NAME:CUDA:CXX:ARGS, where CUDA and CXX are compile flags (the compile
# definitions of a trial patch in the working tree: CUDA for the kernels, CXX for host code such
# as kernel_bench) and ARGS the benchmark's own flags for a run-time A/B (e.g. kernel_bench's
# --warm_code). Variants of the same compile flags share one binary.
# kernel_bench checks every build against the reference before timing it, as always.
# Writes OUTDIR/<variant>_<round>.{json,txt}, build_<variant>.log, compare.txt, nvidia-smi.txt
# (ARCHIVE=1: all but compare.txt packed into OUTDIR/logs.tar.gz, for a device call).
# BENCH=step_bench runs step_bench instead (its steps check builder calls and content errors).
# METRIC=host_us compares the build() call's host time instead of device us (launch-path trials).
# Usage: [DEPS=.deps/root] [BENCH=kernel_bench] [ROUNDS=2] [REPS=3] [TIMEOUT=150 (s a run)] scripts/gpu_trial.sh OUTDIR FILTER VARIANT...
#   e.g. scripts/gpu_trial.sh /tmp/t 'cuda/kernel_planned/[^/]+/C4A/prefill8K/' base \
#        rotate:-DDSV4_ROTATE_PASSES=1
set -uo pipefail
out=${1:?usage: gpu_trial.sh OUTDIR FILTER VARIANT...}
filter=${2:?usage: gpu_trial.sh OUTDIR FILTER VARIANT...}
shift 2
[ $# -ge 1 ] || { echo "gpu_trial.sh: name at least one variant" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit
# shellcheck source=scripts/deps_args.sh
. scripts/deps_args.sh
# shellcheck source=scripts/archive_outputs.sh
. scripts/archive_outputs.sh
deps_from_env
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
bench=${BENCH:-kernel_bench}
names=()
declare -A build_of args_of    # variant -> its build folder, its run-time flags
declare -A built cuda_of cxx_of  # build folder -> the first variant that builds it, its flags
for spec in "$@"; do
  IFS=: read -r name cuda cxx run_args <<< "$spec"
  names+=("$name")
  dir=build-trial-$(printf '%s' "${cuda:-}|${cxx:-}" | sha1sum | cut -c1-10)
  build_of[$name]=$dir
  args_of[$name]=${run_args:-}
  [ -n "${built[$dir]:-}" ] || { built[$dir]=$name; cuda_of[$dir]=${cuda:-}; cxx_of[$dir]=${cxx:-}; }
done
jobs=$(($(nproc) / ${#built[@]}))
[ "$jobs" -ge 2 ] || jobs=2
start=$SECONDS
for dir in "${!built[@]}"; do
  { cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSV4_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_CUDA_FLAGS=${cuda_of[$dir]}" "-DCMAKE_CXX_FLAGS=${cxx_of[$dir]}" \
      "${deps_args[@]}" &&
    cmake --build "$dir" -j "$jobs" --target "$bench"; } > "$out/build_${built[$dir]}.log" 2>&1 &
done
wait
echo "builds: $((SECONDS - start)) s"
status=0
for ((round = 1; round <= ${ROUNDS:-2}; ++round)); do
  # Odd rounds run the variants in the order given, even rounds in reverse: a drift in time (or
  # a first-run effect) then falls on every variant alike.
  order=("${names[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((i = ${#names[@]} - 1; i >= 0; --i)); do order+=("${names[$i]}"); done
  fi
  for name in "${order[@]}"; do
    exe=${build_of[$name]}/bench/$bench
    [ -x "$exe" ] || { echo "$name: build failed"; tail -20 "$out/build_${built[${build_of[$name]}]}.log"; status=1; continue; }
    # shellcheck disable=SC2086  # ARGS: several flags
    timeout "${TIMEOUT:-150}" "$exe" ${args_of[$name]} --backends=cuda --benchmark_repetitions="${REPS:-3}" --benchmark_display_aggregates_only=true \
      --benchmark_filter="$filter" --benchmark_out="$out/${name}_$round.json" --benchmark_out_format=json \
      > "$out/${name}_$round.txt" 2>&1
    rc=$?
    [ "$rc" = 0 ] || status=1
    echo "$name round $round: rc=$rc, $(grep -c median "$out/${name}_$round.txt") medians," \
      "$(grep -ci error "$out/${name}_$round.txt") error lines"
  done
done
groups=()  # the variants that left results (the first is the base)
for name in "${names[@]}"; do
  compgen -G "$out/${name}_*.json" > /dev/null || continue
  [ ${#groups[@]} -eq 0 ] || groups+=(--)
  groups+=("$out/${name}"_*.json)
done
python3 bench/compare_ab.py ${METRIC:+--metric "$METRIC"} "${groups[@]}" > "$out/compare.txt" 2>&1 || status=1
cat "$out/compare.txt"
echo "total: $((SECONDS - start)) s"
archive_outputs "$out" compare.txt  # ARCHIVE=1: the JSON, logs and nvidia-smi.txt in logs.tar.gz
exit $status
