#!/usr/bin/env bash
# Installs the Python package dsv4_indices into ${PYTHON:-python3} with pip: first the build and
# test tools (python/requirements.txt), then `pip install .` without build isolation, so that the
# tools just installed, the machine's cmake and (when present) nvcc build it. With a .whl/ folder
# (scripts/python_wheels.sh) nothing is fetched: the offline install of the H200 machines.
# Needs what the C++ libraries need (a C++17 compiler, CMake >= 3.24, Eigen 3). DEPS=<dir>
# points CMake at a carried folder of unpacked Debian packages, as in the GPU scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ -n "${DEPS:-}" ]; then
  # shellcheck source=scripts/deps_args.sh
  . scripts/deps_args.sh
  deps_cmake_args "$(cd "$DEPS" && pwd)"
  SKBUILD_CMAKE_ARGS=$(IFS=';'; echo "${deps_args[*]}")
  export SKBUILD_CMAKE_ARGS
fi
index=()
[ -d .whl ] && index=(--no-index --find-links .whl)
"$python" -m pip install -q "${index[@]}" -r python/requirements.txt
"$python" -m pip install "${index[@]}" --no-build-isolation .
"$python" -c "import dsv4_indices as d; print('dsv4_indices', d.__version__, 'from', d.__file__,
  '| CUDA compiled:', d.cuda_compiled, '| CUDA device:', d.cuda_available())"
