#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every CTest test (GPU tests skip
# visibly without a device) and print the totals.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
