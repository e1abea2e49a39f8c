// CUDA builds: device memory and the error helper of cuda_check.h.
#include <cuda_runtime_api.h>

#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>

#include "optimized/cuda_check.h"
#include "optimized/device_memory.h"

namespace dsv4::opt {

void throw_cuda_error(int code, const char* call, const char* file, int line) {
  const cudaError_t error = static_cast<cudaError_t>(code);
  throw std::runtime_error(std::string("CUDA error at ") + file + ":" + std::to_string(line) +
                           ": " + call + " -> " + cudaGetErrorName(error) + " (" +
                           cudaGetErrorString(error) + ")");
}

void require_device_memory() {}

void* device_allocate(size_t bytes) {
  void* p = nullptr;
  DSV4_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void device_release(void* p) noexcept {
  if (p == nullptr) return;
  const std::shared_lock<std::shared_mutex> no_recording(device_sync_lock());
  (void)cudaFree(p);
}

void device_copy_from_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  const std::shared_lock<std::shared_mutex> no_recording(device_sync_lock());
  DSV4_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  // A pageable upload may still be in flight when cudaMemcpy returns; kernels on a
  // non-blocking stream would not wait for it.
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
}

void device_copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  const std::shared_lock<std::shared_mutex> no_recording(device_sync_lock());
  // Builds may sit on a non-blocking stream that the legacy-stream cudaMemcpy does not wait for.
  DSV4_CUDA_CHECK(cudaDeviceSynchronize());
  DSV4_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

}  // namespace dsv4::opt
