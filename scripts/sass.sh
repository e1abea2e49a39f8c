#!/usr/bin/env bash
# The kernels' machine code (SASS) and resources on a host without a GPU: the build host has
# nvcc and ptxas but not NVIDIA's binary utilities, so nvdisasm and cuobjdump come from their
# PyPI wheels (nvidia-cuda-nvdisasm, nvidia-cuda-cuobjdump: NVIDIA's own tools, downloaded once
# into .tools/, git-ignored), and kernels/mixed_sparse_indices.cu is compiled to an sm_90
# cubin as the Release build compiles it. For reading what a change does to a kernel's
# instruction order (e.g. whether a pass's table reads are in flight together) before
# spending device time on it.
# Usage: scripts/sass.sh OUTDIR [NVCC_FLAGS...]   (e.g. a trial's -DDSV4_SOME_TRIAL)
# Writes OUTDIR/kernels.cubin, kernels.sass (nvdisasm -c) and resources.txt (one line per
# kernel: registers, stack, shared memory, demangled name).
set -euo pipefail
out=${1:?usage: sass.sh OUTDIR [NVCC_FLAGS...]}
shift
cd "$(dirname "$0")/.."
mkdir -p "$out" .tools
for tool in nvdisasm cuobjdump; do
  if ! ls .tools/nvidia/cu*/bin/$tool >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest .tools/wheels "nvidia-cuda-$tool"
    python3 -m zipfile -e .tools/wheels/nvidia_cuda_${tool}-*.whl .tools
    chmod +x .tools/nvidia/cu*/bin/$tool
  fi
done
nvdisasm_found=(.tools/nvidia/cu*/bin/nvdisasm)
bin=$(dirname "${nvdisasm_found[0]}")
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
# The build's CUDA warning flags (DSV4_CUDA_WARNINGS, read from CMakeLists.txt), so that a trial
# that compiles here compiles there.
read -ra warnings <<< "$(sed -n 's/^set(DSV4_CUDA_WARNINGS \(.*\))$/\1/p' CMakeLists.txt)"
[ "${#warnings[@]}" -gt 0 ] || { echo "sass.sh: no set(DSV4_CUDA_WARNINGS ...) in CMakeLists.txt" >&2; exit 2; }
"$nvcc" "$@" -I. -O3 -DNDEBUG -std=c++17 -arch=sm_90 -lineinfo "${warnings[@]}" \
  -cubin -x cu kernels/mixed_sparse_indices.cu -o "$out/kernels.cubin"
"$bin/nvdisasm" -c "$out/kernels.cubin" > "$out/kernels.sass"
# "Function <mangled>:" then "REG:n STACK:n SHARED:n ..." -> "REG:n STACK:n SHARED:n <demangled>"
"$bin/cuobjdump" --dump-resource-usage "$out/kernels.cubin" |
  awk '/Function /{name=$2; sub(/:$/, "", name)} /REG:/{print $1, $2, $3, name}' | c++filt > "$out/resources.txt"
echo "sass.sh: $(grep -c . "$out/resources.txt") kernels; $out/kernels.sass, $out/resources.txt"
