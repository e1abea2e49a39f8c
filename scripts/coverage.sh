#!/usr/bin/env bash
# Line and branch coverage (gcc's gcov, summed by gcovr) of reference/, optimized/ and the
# host path of kernels/ (the row logic as the host backend and the kernel tests run it; the
# CUDA kernels are not part of a CPU build), from the CPU test suite.
#   scripts/coverage.sh            builds build-coverage (Debug, CPU path, -DDSV4_COVERAGE=ON),
#                                  runs the CPU tests, reports
#   scripts/coverage.sh BUILD_DIR  reports on a build configured with -DDSV4_COVERAGE=ON whose
#                                  tests have run (CI: the sanitizer job's build-sanitize)
# Exits 1 when optimized/ + kernels/ is below the targets: lines 95 %, branches 85 %. Branches
# count without gcc's exception-handling and unreachable ones (--exclude-throw-branches,
# --exclude-unreachable-branches). Needs gcovr (Debian: apt-get install gcovr; or pip).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-}
if [ -z "$build_dir" ]; then
  build_dir=build-coverage
  generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DDSV4_CUDA=OFF -DDSV4_COVERAGE=ON >/dev/null
  cmake --build "$build_dir" -j "$(nproc)" --target reference_tests optimized_tests property_tests cli_tests \
    fuzz_corpus_tests dsv4
  find "$build_dir" -name '*.gcda' -delete
  ctest --test-dir "$build_dir" -j "$(nproc)" --timeout 1800 -LE bench-smoke --output-on-failure >/dev/null
fi
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
# Headers reach the compiler through the build tree's include links (BUILD/include/<lib>/<lib>),
# under which gcov names them; they are counted as <lib>/<header>.
# --gcov-ignore-parse-errors: a counter that threads bumped at once (dsv4 verify's workers run
# the reference and the host backend side by side) can come out of gcov negative ("branch 3
# taken -7", seen on a 2-core run), which gcovr 5 cannot parse; such a line is skipped, with a
# warning, rather than failing the report. (-fprofile-update=atomic would make every counter
# exact at the price of a locked add per count in the row loops.)
gcovr --root . --object-directory "$build_dir" --filter '(.*/include/[a-z]+/)?(reference|optimized|kernels)/' \
  --gcov-ignore-parse-errors --exclude-throw-branches --exclude-unreachable-branches -j "$(nproc)" --json-summary "$summary" "$build_dir" >/dev/null
python3 - "$summary" <<'PY'
import json, re, sys
files = json.load(open(sys.argv[1]))["files"]
for f in files:
    f["filename"] = re.sub(r"^.*?/include/[a-z]+/", "", f["filename"])
def total(prefixes):
    picked = [f for f in files if f["filename"].startswith(prefixes)]
    s = {k: sum(f[k] for f in picked) for k in ("line_covered", "line_total", "branch_covered", "branch_total")}
    return s, len(picked)
def pct(a, b):
    return 100.0 * a / b if b else 100.0
rows = [("reference/", ("reference/",)), ("optimized/", ("optimized/",)), ("kernels/ (host path)", ("kernels/",)),
        ("optimized/ + kernels/", ("optimized/", "kernels/"))]
print(f"{'coverage':24} {'files':>5} {'lines':>18} {'branches':>18}")
for name, prefixes in rows:
    s, n = total(prefixes)
    print(f"{name:24} {n:5} {pct(s['line_covered'], s['line_total']):6.1f} % {s['line_covered']:4}/{s['line_total']:<5}"
          f" {pct(s['branch_covered'], s['branch_total']):6.1f} % {s['branch_covered']:4}/{s['branch_total']:<5}")
s, _ = total(("optimized/", "kernels/"))
line, branch = pct(s["line_covered"], s["line_total"]), pct(s["branch_covered"], s["branch_total"])
if line < 95.0 or branch < 85.0:
    print(f"coverage: optimized/ + kernels/ below the targets (lines 95 %, branches 85 %): "
          f"lines {line:.1f} %, branches {branch:.1f} %")
    sys.exit(1)
print("coverage: optimized/ + kernels/ meet the targets (lines >= 95 %, branches >= 85 %)")
PY
