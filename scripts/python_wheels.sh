#!/usr/bin/env bash
# Downloads the Python package's build and test tools (python/requirements.txt and what they
# need) as wheels into .whl/ (git-ignored), for a machine without network such as the H200s lent
# to this project. Carry .whl/ there and run scripts/install_python.sh (or its two pip commands):
#   python3 -m pip install --no-index --find-links .whl -r python/requirements.txt
#   python3 -m pip install --no-index --find-links .whl --no-build-isolation .
# All are pure-Python wheels (py3-none-any, ~2.5 MB together): any CPython >= 3.10 takes them.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip download --only-binary=:all: --dest .whl -r python/requirements.txt
ls -1 .whl
