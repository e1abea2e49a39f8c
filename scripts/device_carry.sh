#!/usr/bin/env bash
# Makes the two git-ignored folders a device call carries, on this (networked) build host:
#   .deps/  RapidCheck, nlohmann_json and CLI11 as unpacked Debian packages (apt-get download +
#           dpkg -x), which the H200 machines lack and cannot fetch; pass DEPS=$PWD/.deps to the
#           GPU scripts (deps_args.sh points CMake at them).
#   .whl/   the Python package's build and test tools as wheels (python_wheels.sh), for
#           scripts/gpu_python.sh / install_python.sh there.
# A new checkout has neither (they are not committed), so a session's first device call needs
# this first: run it, then carry [".deps"] (and ".whl" for the Python call).
# Usage: scripts/device_carry.sh   (idempotent: an existing folder is checked, not remade)
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(librapidcheck-dev nlohmann-json3-dev libcli11-dev)
if [ ! -d .deps/usr ]; then
  work=$(mktemp -d)
  (cd "$work" && apt-get download "${packages[@]}" >/dev/null)
  mkdir -p .deps
  for deb in "$work"/*.deb; do dpkg -x "$deb" .deps; done
  rm -rf "$work"
fi
for config in lib/x86_64-linux-gnu/cmake/rapidcheck share/cmake/nlohmann_json share/cmake/CLI11; do
  ls .deps/usr/$config/*onfig.cmake >/dev/null 2>&1 || { echo "device_carry.sh: .deps lacks usr/$config" >&2; exit 1; }
done
[ -d .whl ] || scripts/python_wheels.sh >/dev/null
ls .whl/*.whl >/dev/null
echo "device_carry.sh: .deps $(du -sh .deps | cut -f1), .whl $(du -sh .whl | cut -f1) (carry limit 64 MiB in all)"
