#!/usr/bin/env bash
# The main job: install what is missing, build, and verify reference == optimized on random
# DeepSeek-V4 steps (Flash, Pro and random schedules, every backend present).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
./build/harness/dsv4 verify "$@"
