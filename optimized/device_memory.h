// Device memory for BackendBuffer and the CUDA builder's arena. Built without CUDA, every
// function but device_release throws std::runtime_error.
#pragma once
#include <cstddef>

namespace dsv4::opt {

void require_device_memory();  // throws std::runtime_error when built without CUDA
void* device_allocate(size_t bytes);  // cudaMalloc (256-byte aligned); throws on failure
void device_release(void* p) noexcept;
// Synchronous: complete when they return, ordered after all work already queued on the device.
void device_copy_from_host(void* dst, const void* src, size_t bytes);
void device_copy_to_host(void* dst, const void* src, size_t bytes);

}  // namespace dsv4::opt
