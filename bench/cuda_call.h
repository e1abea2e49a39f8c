// The benchmarks' CUDA calls, checked: a failure throws std::runtime_error naming the call,
// the file:line and the CUDA error; kernels launched through the runtime with the builder's
// launch attribute (the builder's own launch goes through the driver since ea831b8: the same
// device work, 0.09-0.43 us less host time a launch as measured). For the benchmarks' .cu
// files (CUDA builds only).
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace dsv4::bench {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")");
}
#define BENCH_CUDA_CHECK(call) ::dsv4::bench::check((call), #call, __FILE__, __LINE__)

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// cudaLaunchKernelExC + cudaGetLastError, with programmatic dependent launch when asked (the
// builder's launch before ea831b8; launch_empty_kernel_driver_programmatic times today's,
// kernels::launch_build_kernel).
inline void launch_ex_checked(const void* kernel, dim3 grid, dim3 block, void** params, bool programmatic_launch,
                              void* stream, const char* call) {
  cudaLaunchAttribute programmatic{};
  programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = as_stream(stream);
  config.attrs = programmatic_launch ? &programmatic : nullptr;
  config.numAttrs = programmatic_launch ? 1 : 0;
  cudaError_t status = cudaLaunchKernelExC(&config, kernel, params);
  const cudaError_t last = cudaGetLastError();  // also clears a launch error's state
  if (status == cudaSuccess) status = last;
  check(status, call, __FILE__, __LINE__);
}

}  // namespace dsv4::bench
