#!/usr/bin/env bash
# Issue reproductions that need the real `dsv4` process (signals, hangs, process limits):
#   dsv4_process_test.sh DSV4_BINARY CASE
# Exits 0 when the case behaves: a clear error with the documented exit code, no signal,
# no hang, no abort.
set -uo pipefail
dsv4=${1:?usage: dsv4_process_test.sh DSV4_BINARY CASE}
case_name=${2:?missing CASE}
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

run() {  # run EXPECTED_RC TIMEOUT_S ARGS...: the binary under a time cap
  local expected=$1 cap=$2
  shift 2
  timeout -k 5 "$cap" "$@" >"$out" 2>"$err"
  rc=$?
  if [ "$rc" -ne "$expected" ]; then
    echo "FAIL: '$*' exited $rc, expected $expected (124: timed out; >128: killed by signal $((rc - 128)))"
    echo "--- stdout"; tail -20 "$out"; echo "--- stderr"; tail -20 "$err"
    exit 1
  fi
}
expect_in() {  # expect_in FILE TEXT
  grep -qF -- "$2" "$1" || { echo "FAIL: '$2' not in output:"; cat "$1"; exit 1; }
}

case "$case_name" in
  max_size_no_sigfpe)  # was SIGFPE (division by zero in plan_step)
    run 2 60 "$dsv4" verify --steps 3 --max-size 4294967295
    expect_in "$err" "--max-size"
    expect_in "$err" "0..100"
    ;;
  step_int64_max_no_hang)  # was an endless wait (signed overflow of step + 1)
    run 2 30 "$dsv4" verify --step 9223372036854775807
    expect_in "$err" "--step"
    ;;
  max_tokens_not_truncated)  # ran as "at most -2147483648 tokens" and printed PASS
    run 2 30 "$dsv4" verify --max-tokens 2147483648
    expect_in "$err" "--max-tokens"
    if grep -q PASS "$out"; then echo "FAIL: PASS printed"; exit 1; fi
    ;;
  threads_that_cannot_start_do_not_abort)  # was "terminate called without an active exception"
    # 1000 thread stacks do not fit in 2 GB of address space: some threads cannot start.
    timeout -k 5 300 prlimit --as=2000000000 -- "$dsv4" verify --steps 300 --jobs 1000 --quiet --backend host \
      >"$out" 2>"$err"
    rc=$?
    if grep -q "terminate called" "$err" || [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
      echo "FAIL: exited $rc (0 or 3 expected, never an abort)"; cat "$out" "$err"; exit 1
    fi
    expect_in "$err" "worker threads"
    [ "$rc" -eq 0 ] && expect_in "$out" "result: PASS"
    [ "$rc" -eq 3 ] && expect_in "$err" "out of memory"
    ;;
  help_exits_zero)  # `verify --help` exited 2; `replay --help` loaded a capture named --help
    for sub in "" verify replay demo; do
      run 0 30 "$dsv4" $sub --help
      expect_in "$out" "Usage: dsv4"
    done
    ;;
  *)
    echo "unknown case $case_name"; exit 2 ;;
esac
echo "ok: $case_name"
