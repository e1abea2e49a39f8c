// Device memory for BackendBuffer and the CUDA builder's arena. Built without CUDA, every
// function but device_release throws std::runtime_error.
#pragma once
#include <cstddef>
#include <shared_mutex>

namespace dsv4::opt {

void require_device_memory();  // throws std::runtime_error when built without CUDA
void* device_allocate(size_t bytes);  // cudaMalloc (256-byte aligned); throws on failure
void device_release(void* p) noexcept;
// Synchronous: complete when they return, ordered after all work already queued on the device.
void device_copy_from_host(void* dst, const void* src, size_t bytes);
void device_copy_to_host(void* dst, const void* src, size_t bytes);

// CUDA forbids synchronizing the device while one of its streams is being captured (the driver
// crashed in cudaDeviceSynchronize when a dsv4 verify thread downloaded while another recorded
// a step graph): the device-wide synchronizations above and device_release's cudaFree hold this
// lock shared, a CUDA builder's recording holds it exclusively from begin to end.
inline std::shared_mutex& device_sync_lock() {
  static std::shared_mutex lock;
  return lock;
}

}  // namespace dsv4::opt
