// The benchmarks' CUDA calls, checked: a failure throws std::runtime_error naming the call,
// the file:line and the CUDA error; kernels launched through the runtime with the builder's
// launch attribute (the builder's own launch goes through the driver since ea831b8: the same
// device work, 0.09-0.43 us less host time a launch as measured). For the benchmarks' .cu
// files (CUDA builds only).
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/mixed_sparse_indices_launch.h"

namespace dsv4::bench {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")");
}
#define BENCH_CUDA_CHECK(call) ::dsv4::bench::check((call), #call, __FILE__, __LINE__)

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// cudaMalloc of `bytes`, every byte set to `fill`, and the device synchronized: the memset runs
// on the legacy stream and the benchmarks' streams are non-blocking, so without the wait a
// kernel could read the region before it is filled. Freed again if a step fails; `what` names
// the region in the error.
inline void* filled_device_region(size_t bytes, unsigned char fill, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), (std::string("cudaMalloc(") + what + ")").c_str(), __FILE__, __LINE__);
  cudaError_t status = cudaMemset(p, fill, bytes);
  if (status == cudaSuccess) status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    (void)cudaFree(p);
    check(status, (std::string("cudaMemset(") + what + ") / cudaDeviceSynchronize").c_str(), __FILE__, __LINE__);
  }
  return p;
}

// A 1-D launch through the runtime (kernels::launch_kernel_runtime: cudaLaunchKernelExC +
// cudaGetLastError), with programmatic dependent launch when asked: the builder's launch before
// ea831b8 (launch_empty_kernel_driver_programmatic times today's, kernels::launch_build_kernel).
inline void launch_ex_checked(const void* kernel, unsigned ctas, unsigned threads, void** params,
                              bool programmatic_launch, void* stream, const char* call) {
  const kernels::KernelStatus status = kernels::launch_kernel_runtime(
      kernel, ctas, static_cast<int32_t>(threads), params, programmatic_launch, as_stream(stream), call, 0);
  check(static_cast<cudaError_t>(status.code), call, __FILE__, __LINE__);
}

}  // namespace dsv4::bench
