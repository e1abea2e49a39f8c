// CUDA backend. Declared in every build; without CUDA support compiled in,
// cuda_device_present() is false and make_cuda_builder throws std::runtime_error.
#pragma once
#include <cstddef>

#include "kernels/mixed_sparse_indices_policy.h"
#include "optimized/builder.h"

namespace dsv4::opt {

// True when the CUDA backend is compiled in and a device is visible.
bool cuda_device_present();
// `stream` is a cudaStream_t (nullptr = the legacy default stream); builds are ordered on it.
std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream = nullptr);
// (Added by the optimized-path owner.) As above, with the step workspace pre-sized to
// `workspace_bytes` in one chunk (default 64 MiB), so that steps whose outputs fit never call
// cudaMalloc, not even the first. The builder uses the device current at construction.
std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream, size_t workspace_bytes);
// As above, every launch taking `forced_shape` instead of the policy's choice (tests of every
// kernel variant; the launch-shape sweep of kernel_bench). An invalid shape (group threads not
// a power of two in [8, 256]) means the policy's.
std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream, size_t workspace_bytes,
                                                             kernels::LaunchShape forced_shape);

}  // namespace dsv4::opt
