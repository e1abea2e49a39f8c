#!/usr/bin/env bash
# The whole test suite: install what is missing, build (the Python package dsv4_indices too), run
# every CTest test (GPU tests skip visibly without a device) and print the totals, then the
# Python package's pytest suite; both must pass. Then the sanitizer job (CPU path, Debug,
# ASan + UBSan: scripts/check_sanitizers.sh), whose build also reports coverage
# (scripts/coverage.sh). On 2 cores from scratch: ~4 min + ~5 min.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/python_env.sh
./scripts/build.sh -DDSV4_PYTHON=ON -DPython_EXECUTABLE="$PWD/build-venv/bin/python"
status=0
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900 || status=1
PYTHONPATH=build/python build-venv/bin/python -m pytest python/tests -q || status=1
[ "$status" -eq 0 ] || { echo "run_tests: FAILED (ctest or pytest above)"; exit "$status"; }
./scripts/check_sanitizers.sh
