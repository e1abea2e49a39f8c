#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every CTest test (GPU tests skip
# visibly without a device) and print the totals; then the sanitizer job (CPU path, Debug,
# ASan + UBSan: scripts/check_sanitizers.sh). On 2 cores from scratch: ~2 min + ~4 min.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
./scripts/check_sanitizers.sh
