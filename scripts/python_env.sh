#!/usr/bin/env bash
# The Python environment of the two README commands: a virtual environment build-venv/ on
# ${PYTHON:-python3} that sees that interpreter's packages (numpy, torch where installed) and
# holds the build and test tools of python/requirements.txt (from .whl/ when present, else from
# PyPI). A venv because Debian's own python3 refuses pip installs (PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build-venv
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv --system-site-packages "$venv"
index=()
[ -d .whl ] && index=(--no-index --find-links .whl)
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${index[@]}" -r python/requirements.txt
# numpy, which the tests and the helpers' numpy path import: Debian's python3-numpy
# (install_deps.sh) serves Debian's python3 only; an interpreter that does not see it (pyenv's
# python3 on this project's CPU machines) gets it from PyPI (or .whl). Offline without it (an
# H200 machine, whose venv does not see the numpy that its python3 has) only a warning: the
# package builds without numpy, and its tests then say what is missing.
if ! "$venv/bin/python" -c 'import numpy' 2>/dev/null &&
  ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "${index[@]}" numpy; then
  echo "python_env: numpy is not importable in $venv and could not be installed: the Python tests need it" >&2
fi
