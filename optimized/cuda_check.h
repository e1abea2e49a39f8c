// Every CUDA runtime call of the optimized path goes through DSV4_CUDA_CHECK: a failure throws
// std::runtime_error naming the call, its file:line and the CUDA error.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/kernel_status.h"

namespace dsv4::opt {

[[noreturn]] void throw_cuda_error(int code, const char* call, const char* file, int line);

inline void cuda_check(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw_cuda_error(static_cast<int>(code), call, file, line);
}

inline void check_kernel_status(const kernels::KernelStatus& status) {
  if (!status.ok()) throw_cuda_error(status.code, status.call, status.file, status.line);
}

}  // namespace dsv4::opt

#define DSV4_CUDA_CHECK(call) ::dsv4::opt::cuda_check((call), #call, __FILE__, __LINE__)
