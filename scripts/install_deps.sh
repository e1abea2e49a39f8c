#!/usr/bin/env bash
# Installs, with apt-get, whichever build dependencies are missing (Debian/Ubuntu, as root).
set -euo pipefail
# (Not matplotlib: only bench/plot_ttft.py plots, in the GPU benchmark run; neither README
# command does, and python3-matplotlib has by far the largest dependency tree of the list.)
packages=(cmake ninja-build g++ libeigen3-dev librapidcheck-dev libgtest-dev libgmock-dev
          libbenchmark-dev nlohmann-json3-dev libcli11-dev gcovr python3-numpy
          python3-dev python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "install_deps: nothing missing"
fi
