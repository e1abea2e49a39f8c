#!/usr/bin/env bash
# The sanitizer job: builds the CPU path (no CUDA) in Debug with AddressSanitizer +
# UndefinedBehaviorSanitizer (gcc's, no extra packages), runs the CPU test suite (every CTest
# test but the bench smoke tests; GPU tests skip without a device) and a short `dsv4 verify`.
# Any sanitizer report fails the job (-fno-sanitize-recover, halt_on_error, abort_on_error).
#   scripts/check_sanitizers.sh [VERIFY_STEPS]        (default 100)
# Environment: BUILD_DIR (default build-sanitize), JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-sanitize}
steps=${1:-100}
jobs=${JOBS:-$(nproc)}
t0=$(date +%s)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The properties with RapidCheck's default 100 cases instead of CI's 300 (same fixed seed):
# the job looks for memory and UB errors, and Debug + ASan is ~20x slower.
export RC_PARAMS=${RC_PARAMS:-max_success=100}

generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DDSV4_CUDA=OFF \
  -DDSV4_SANITIZERS=address,undefined >/dev/null
cmake --build "$build_dir" -j "$jobs" --target reference_tests optimized_tests property_tests cli_tests fuzz_corpus_tests dsv4
t_build=$(date +%s)

# The benchmark-sized steps (8K prefills after 120K tokens) stay with the Release build.
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 1800 -LE bench-smoke -E BenchCases
t_tests=$(date +%s)

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build_dir/harness/dsv4" verify --steps "$steps" --backend host --quiet | tee "$out"
grep -q "result: PASS" "$out"
# The hostile-input reproductions once more, as processes, under the sanitizers.
for dir in tests/data/capture_*; do "$build_dir/harness/dsv4" replay "$dir" --backend host >/dev/null; done
t_end=$(date +%s)
echo "check_sanitizers: OK (ASan + UBSan, Debug): build $((t_build - t0)) s, ctest $((t_tests - t_build)) s," \
     "dsv4 verify --steps $steps + replays $((t_end - t_tests)) s, total $((t_end - t0)) s"
