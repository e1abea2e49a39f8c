# shellcheck shell=bash
# Sourced by the GPU scripts (gpu_check.sh, gpu_sweep.sh, run_gpu_bench.sh): points CMake at a
# carried DEPS folder for machines that cannot apt-get (unpacked Debian packages under
# DIR/usr: librapidcheck-dev, nlohmann-json3-dev, libcli11-dev, ...).
#   deps_cmake_args DIR   sets the array deps_args (CMAKE_PREFIX_PATH and each <pkg>_DIR found)
#                         and puts DIR's libraries on LD_LIBRARY_PATH
deps_cmake_args() {
  local deps=$1 pkg d
  deps_args=("-DCMAKE_PREFIX_PATH=$deps/usr")
  for pkg in nlohmann_json rapidcheck benchmark GTest Eigen3 CLI11; do
    for d in "$deps/usr/lib/x86_64-linux-gnu/cmake/$pkg" "$deps/usr/share/cmake/$pkg" \
             "$deps/usr/share/$pkg/cmake" "$deps/usr/share/$(echo "$pkg" | tr "[:upper:]" "[:lower:]")/cmake"; do
      if ls "$d"/*onfig.cmake >/dev/null 2>&1; then
        deps_args+=("-D${pkg}_DIR=$d")
        break
      fi
    done
  done
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

#   deps_from_env         the same for $DEPS when it is set (deps_args empty otherwise)
deps_from_env() {
  deps_args=()
  [ -z "${DEPS:-}" ] || deps_cmake_args "$(cd "$DEPS" && pwd)"
}
