#!/usr/bin/env bash
# The main job: install what is missing, build (the Python package dsv4_indices too), and verify
# reference == optimized on random DeepSeek-V4 steps (Flash, Pro and random schedules, every
# backend present).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/python_env.sh
./scripts/build.sh -DDSV4_PYTHON=ON -DPython_EXECUTABLE="$PWD/build-venv/bin/python"
./build/harness/dsv4 verify "$@"
