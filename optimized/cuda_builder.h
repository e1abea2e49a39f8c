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

// Every choice of a CUDA builder in one place; the overloads above are shorthands for it.
struct CudaBuilderOptions {
  size_t workspace_bytes = size_t{64} << 20;
  kernels::LaunchShape forced_shape{};  // group_threads 0: the policy's
  // Programmatic dependent launch (kernels/mixed_sparse_indices_launch.h): a build may start
  // launching while the kernel before it on the stream finishes. Same results; on the H200 it
  // took a cached Flash step from 71 to 49 us (decode 64) and 291 to 263 us (prefill 8K).
  bool programmatic_launch = true;
  // The gathered-lookups kernel for C128A rows after long context (which builds take it, and what
  // it measured on an H100 and an H200: prefill_gathers_lookups in
  // kernels/mixed_sparse_indices_policy.h). false: the default kernels for every build (a
  // same-binary A/B).
  bool gathered_lookups = true;
};
std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream, const CudaBuilderOptions& options);

}  // namespace dsv4::opt
