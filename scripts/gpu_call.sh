#!/usr/bin/env bash
# One device call's work, chosen by the card that came (a call that asks for the H200 kind
# often gets an H100): the H200's own work where the card is an H200, other work elsewhere.
#   scripts/gpu_call.sh OUTDIR TASK [FALLBACK]
# runs TASK on an H200 and FALLBACK (default TASK) on any other card; TASK and FALLBACK are
#   bench       scripts/run_gpu_bench.sh with the peer (kernel_bench, step_bench, the peer; the
#               TTFT report only with BENCH_TTFT=on), packed into OUTDIR/bench.tgz
#   sanitizers  scripts/gpu_check.sh's sanitizer phase, the 200-replay step-graph tests included
#   tests       scripts/gpu_check.sh's tests phase: GPU tests, dsv4 verify (VERIFY_STEPS, default
#               10000) in every SPEC §8 mode on both backends, the shipped captures
#   trial       scripts/gpu_trial.sh OUTDIR/trial "$TRIAL_FILTER" $TRIAL_VARIANTS (both must be set;
#               ROUNDS default 4), leaving OUTDIR/trial/compare.txt and logs.tar.gz
#   none        nothing (a card not worth the call: it ends at once)
# OUTDIR/gpu.txt names the card and the tree; the scripts' files land under OUTDIR (at most 8
# come back from a device call: bench.tgz and bench.log, chk/summary.txt and chk/logs.tar.gz,
# gpu.txt; each script records the commit itself). DEPS as for those scripts; unset, it is the
# carried .deps (scripts/device_carry.sh makes it) where the tree has one: a call that forgot
# to name it once stopped at CMake's configure, device time spent on a machine that came.
set -uo pipefail
out=${1:?usage: gpu_call.sh OUTDIR TASK [FALLBACK]}
task=${2:?usage: gpu_call.sh OUTDIR TASK [FALLBACK]}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit
if [ -z "${DEPS:-}" ] && [ -d .deps/usr ]; then export DEPS=$PWD/.deps; fi
for t in "$task" "${3:-$task}"; do
  case $t in
    bench|sanitizers|tests|none) ;;
    trial)
      if [ -z "${TRIAL_FILTER:-}" ] || [ -z "${TRIAL_VARIANTS:-}" ]; then
        echo "gpu_call.sh: trial needs TRIAL_FILTER and TRIAL_VARIANTS (e.g. 'base knob:-DDSV4_KNOB=1')" >&2
        exit 2
      fi ;;
    *) echo "gpu_call.sh: unknown task $t (bench, sanitizers, tests, trial, none)" >&2; exit 2 ;;
  esac
done
# The working tree's git tree hash (tracked and untracked files, ignored ones left out): equal to
# `git rev-parse COMMIT^{tree}` for the commit whose files ran, whatever HEAD the device copy's
# git metadata names (a device call once recorded an older HEAD than the files it ran).
index=$(mktemp -u)
tree=$(GIT_INDEX_FILE=$index git add -A . 2>/dev/null && GIT_INDEX_FILE=$index git write-tree 2>/dev/null)
rm -f "$index"
{ nvidia-smi --query-gpu=name,driver_version,uuid,clocks.max.sm --format=csv
  echo "head $(git rev-parse --short=12 HEAD 2>/dev/null), tree ${tree:-unknown}"; } > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
grep -q H200 "$out/gpu.txt" || task=${3:-$task}
echo "gpu_call.sh: $task"
start=$SECONDS
status=0
case $task in
  bench)
    BENCH_TTFT=${BENCH_TTFT:-off} BENCH_DEADLINE_S=${BENCH_DEADLINE_S:-400} BENCH_TARBALL=$out/bench.tgz \
      scripts/run_gpu_bench.sh "$out/bench" > "$out/bench.log" 2>&1 || status=$?
    cat "$out/bench/run_gpu_bench_stages.txt"
    rm -rf "$out/bench" ;;  # its files are in bench.tgz
  sanitizers)
    ARCHIVE=1 PHASES=sanitizers SANITIZER_TIMEOUT=${SANITIZER_TIMEOUT:-500} \
      scripts/gpu_check.sh "$out/chk" 100 || status=$? ;;
  tests)
    ARCHIVE=1 PHASES=tests STAGE_TIMEOUT=${STAGE_TIMEOUT:-500} \
      scripts/gpu_check.sh "$out/chk" "${VERIFY_STEPS:-10000}" || status=$? ;;
  trial)
    # shellcheck disable=SC2086  # TRIAL_VARIANTS: one word a variant
    ARCHIVE=1 ROUNDS=${ROUNDS:-4} scripts/gpu_trial.sh "$out/trial" "$TRIAL_FILTER" $TRIAL_VARIANTS || status=$? ;;
  none) ;;
esac
echo "gpu_call.sh: $task took $((SECONDS - start)) s, exit status $status"
exit $status
