#!/usr/bin/env bash
# The sanitizer job: builds the CPU path (no CUDA) in Debug with AddressSanitizer +
# UndefinedBehaviorSanitizer (gcc's, no extra packages), runs the CPU test suite (every CTest
# test but the bench smoke tests; GPU tests skip without a device) and a short `dsv4 verify`.
# Any sanitizer report fails the job (-fno-sanitize-recover, halt_on_error, abort_on_error).
# The same build counts gcov coverage (one Debug CPU build instead of two in CI): at the end
# scripts/coverage.sh reports it and fails the job below its targets.
#   scripts/check_sanitizers.sh [VERIFY_STEPS]        (default 100)
# Environment: BUILD_DIR (default build-sanitize), JOBS (default nproc), COVERAGE (ON|OFF,
# default ON; needs gcovr).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-sanitize}
steps=${1:-100}
jobs=${JOBS:-$(nproc)}
t0=$(date +%s)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The properties with 20 cases instead of the Release job's 300 (same fixed seed): the job
# looks for memory and UB errors, Debug + ASan is ~20x slower, and the cases only repeat the
# same code paths: on 2 cores ctest took 388 s at 100 cases, 259 s at 40, 123 s at 20, with
# the same coverage at 40 and 20 (lines 98.8 %, branches 85.2 %).
export RC_PARAMS=${RC_PARAMS:-max_success=20}

generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
coverage=${COVERAGE:-ON}
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DDSV4_CUDA=OFF \
  -DDSV4_SANITIZERS=address,undefined -DDSV4_COVERAGE="$coverage" >/dev/null
# kernel_bench and step_bench too: the only build without CUDA, where the benchmarks link
# against the host stand-ins of gpu_timing_host.cpp (one was missing for a while, unseen).
cmake --build "$build_dir" -j "$jobs" --target reference_tests optimized_tests property_tests cli_tests fuzz_corpus_tests dsv4 \
  kernel_bench step_bench
t_build=$(date +%s)

find "$build_dir" -name '*.gcda' -delete  # coverage of this run only
# gcov's counters are not thread-safe: the runs of `dsv4 verify` on several threads (these
# tests, the verify below) write theirs to a scratch folder; every other test counts.
threaded='^(Cli|VerifyRun)\.|^dsv4_process\.'
scratch=$(mktemp -d)
out=$(mktemp)
trap 'rm -rf "$out" "$scratch"' EXIT
# The GPU-sized steps (LargeStepTest: 8K prefills after 120K tokens, 1M context) stay with the
# Release build.
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 1800 -LE bench-smoke -E "LargeStepTest|$threaded"
GCOV_PREFIX=$scratch ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 1800 -R "$threaded"
t_tests=$(date +%s)

GCOV_PREFIX=$scratch "$build_dir/harness/dsv4" verify --steps "$steps" --backend host --quiet | tee "$out"
grep -q "result: PASS" "$out"
# The hostile-input reproductions once more, as processes, under the sanitizers.
for dir in tests/data/capture_*; do "$build_dir/harness/dsv4" replay "$dir" --backend host >/dev/null; done
t_verify=$(date +%s)
[ "$coverage" = OFF ] || ./scripts/coverage.sh "$build_dir"
t_end=$(date +%s)
echo "check_sanitizers: OK (ASan + UBSan, Debug): build $((t_build - t0)) s, ctest $((t_tests - t_build)) s," \
     "dsv4 verify --steps $steps + replays $((t_verify - t_tests)) s, coverage report $((t_end - t_verify)) s," \
     "total $((t_end - t0)) s"
