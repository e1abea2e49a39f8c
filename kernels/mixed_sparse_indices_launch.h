// Launcher of the CUDA mixed-sparse-indices kernels (kernels/mixed_sparse_indices.cu).
// Asynchronous on `stream`; no allocation, no synchronization.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_status.h"
#include "kernels/mixed_sparse_indices_args.h"

namespace dsv4::opt {

// Builds every row of args (T may be 0: nothing is launched). Content errors are added to
// *args.content_errors (device memory). sm_count: the device's multiprocessor count, queried
// once by the caller. Checks the launch (cudaGetLastError) and returns its status.
KernelStatus launch_mixed_sparse_indices(const MixedSparseIndicesArgs& args, int32_t sm_count,
                                         cudaStream_t stream);

}  // namespace dsv4::opt
