#!/usr/bin/env bash
# Fuzzes the .npy reader and the capture manifest parser with libFuzzer (clang + ASan + UBSan),
# seeded with tests/fuzz/corpus/<target> and every file of the shipped captures (tests/data),
# then minimizes the corpus back into tests/fuzz/corpus/<target>. A crash (or an exception
# other than InputError, or a broken invariant: tests/fuzz/fuzz_entry.h) is copied to
# tests/fuzz/regressions/<target>/, where fuzz_corpus_tests replays it in every build, and
# fails the script.
#   scripts/run_fuzz.sh SECONDS [TARGET...]   TARGET: npy, manifest (default both; SECONDS each)
# Environment: BUILD_DIR (default build-fuzz), JOBS (build jobs, default nproc), PARALLEL=1
# (fuzz every target at once, one process each, instead of one after the other).
# Needs clang and libFuzzer (Debian: clang libfuzzer-14-dev); installs them when missing.
set -euo pipefail
seconds=${1:?usage: run_fuzz.sh SECONDS [npy|manifest ...]}
shift
targets=("$@")
((${#targets[@]})) || targets=(npy manifest)
cd "$(dirname "$0")/.."
root=$PWD
build_dir=${BUILD_DIR:-build-fuzz}
jobs=${JOBS:-$(nproc)}

missing=()
for p in clang libfuzzer-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "run_fuzz: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
./scripts/install_deps.sh

generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSV4_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDSV4_FUZZ=ON -DDSV4_WERROR=OFF \
  -DDSV4_SANITIZERS=address,undefined >/dev/null
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]/%/_fuzzer}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

fuzz_one() {  # fuzz_one TARGET: seeds, fuzzes for $seconds, logs to $build_dir/fuzz-TARGET.log
  local target=$1
  local fuzzer="$root/$build_dir/tests/${target}_fuzzer"
  local work="$root/$build_dir/fuzz-work/$target"
  local artifacts="$root/$build_dir/fuzz-artifacts/$target/"
  local corpus="$root/tests/fuzz/corpus/$target"
  rm -rf "$work" "$artifacts"
  mkdir -p "$work" "$artifacts" "$corpus"
  cp -r "$corpus/." "$work/" 2>/dev/null || true
  if [ "$target" = npy ]; then
    find tests/data -name '*.npy' -exec cp {} "$work/" \;
  else
    local i=0 m
    for m in tests/data/*/manifest.json; do cp "$m" "$work/seed_manifest_$((i++)).json"; done
  fi
  echo "=== $target: fuzzing for ${seconds}s, $(find "$work" -maxdepth 1 -type f | wc -l) seed inputs (log: $build_dir/fuzz-$target.log) ==="
  "$fuzzer" "$work" -max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout=10 -rss_limit_mb=2048 \
    -dict="$root/tests/fuzz/$target.dict" -artifact_prefix="$artifacts" -print_final_stats=1 \
    >"$root/$build_dir/fuzz-$target.log" 2>&1
}
max_len() { [ "$1" = npy ] && echo 4096 || echo 16384; }

declare -A rcs
if [ "${PARALLEL:-0}" = 1 ]; then  # one fuzzing process per target at once
  declare -A pids
  for target in "${targets[@]}"; do fuzz_one "$target" & pids[$target]=$!; done
  for target in "${targets[@]}"; do rc=0; wait "${pids[$target]}" || rc=$?; rcs[$target]=$rc; done
else
  for target in "${targets[@]}"; do rc=0; fuzz_one "$target" || rc=$?; rcs[$target]=$rc; done
fi

status=0
for target in "${targets[@]}"; do
  fuzzer="$root/$build_dir/tests/${target}_fuzzer"
  artifacts="$root/$build_dir/fuzz-artifacts/$target/"
  corpus="$root/tests/fuzz/corpus/$target"
  log="$root/$build_dir/fuzz-$target.log"
  echo "=== $target: fuzzer exit ${rcs[$target]}: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1)"
  grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$log" | sed 's/^/    /'
  # slow-unit-*: an input that once took over 10 s (report_slow_units); not a failure, but said.
  for slow in "$artifacts"slow-unit-*; do
    [ -e "$slow" ] && echo "    note: $target: slow input $(basename "$slow") (kept in $artifacts)"
  done
  crashes=()
  for f in "$artifacts"{crash,leak,timeout,oom}-*; do [ -e "$f" ] && crashes+=("$f"); done
  if ((${#crashes[@]})); then
    mkdir -p "tests/fuzz/regressions/$target"
    cp "${crashes[@]}" "tests/fuzz/regressions/$target/"
    echo "!!! $target: ${#crashes[@]} failing input(s) copied to tests/fuzz/regressions/$target/; the log:"
    grep -E -A30 'ERROR|invariant broken|terminate|Sanitizer' "$log" | head -60 || true
    status=1
  elif [ "${rcs[$target]}" -ne 0 ]; then
    tail -30 "$log"
    status=1
  fi
  # Minimize: the smallest set of inputs with the same coverage replaces the committed corpus.
  minimized="$root/$build_dir/fuzz-min/$target"
  rm -rf "$minimized"; mkdir -p "$minimized"
  "$fuzzer" -merge=1 -max_len="$(max_len "$target")" "$minimized" "$root/$build_dir/fuzz-work/$target" \
    >"$root/$build_dir/fuzz-merge-$target.log" 2>&1 || { echo "!!! $target: merge failed"; status=1; }
  rm -rf "$corpus"; mkdir -p "$corpus"; cp "$minimized"/* "$corpus/" 2>/dev/null || true
  echo "=== $target: corpus minimized to $(find "$corpus" -maxdepth 1 -type f | wc -l) inputs, $(du -s --apparent-size -h "$corpus" | cut -f1) in tests/fuzz/corpus/$target"
done
exit $status
