// Launcher of the CUDA mixed-sparse-indices kernels (kernels/mixed_sparse_indices.cu).
// Asynchronous on `stream`; no allocation, no synchronization.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_status.h"
#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/mixed_sparse_indices_policy.h"

namespace dsv4::opt {

// What the grid size depends on, queried once per device (never per launch).
struct MixedSparseIndicesLaunchConfig {
  int32_t sm_count = 0;
  // Resident CTAs per SM of each kernel variant [row mapping][decode_local][vec4] (occupancy
  // calculator), capped at MixedSparseIndicesPolicy::kMaxCtasPerSm: the grid-stride loop then
  // runs in exactly one wave.
  int32_t ctas_per_sm[3][2][2] = {};
};

// Queries `device`'s SM count and every kernel variant's occupancy.
KernelStatus prepare_mixed_sparse_indices_launch(int device, MixedSparseIndicesLaunchConfig* config);

// Builds every row of args (T may be 0: nothing is launched). Content errors are added to
// *args.content_errors (device memory). Checks the launch (cudaGetLastError) and returns its
// status.
KernelStatus launch_mixed_sparse_indices(const MixedSparseIndicesArgs& args,
                                         const MixedSparseIndicesLaunchConfig& config,
                                         cudaStream_t stream);

}  // namespace dsv4::opt
