#include "optimized/backend_buffer.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "optimized/device_memory.h"
#include "optimized/host_memory.h"

namespace dsv4::opt {

BackendBuffer::BackendBuffer(Backend backend, size_t bytes) : backend_(backend), bytes_(bytes) {
  if (backend == Backend::kCuda) {
    require_device_memory();  // even for 0 bytes: no CUDA buffer exists without CUDA
    data_ = bytes > 0 ? device_allocate(bytes) : nullptr;
  } else {
    data_ = bytes > 0 ? allocate_host(bytes) : nullptr;
  }
}

BackendBuffer::~BackendBuffer() {
  if (backend_ == Backend::kCuda) {
    device_release(data_);
  } else {
    release_host(data_);
  }
}

BackendBuffer::BackendBuffer(BackendBuffer&& other) noexcept
    : backend_(other.backend_),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

BackendBuffer& BackendBuffer::operator=(BackendBuffer&& other) noexcept {
  if (this != &other) {
    std::swap(backend_, other.backend_);
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
  }
  return *this;
}

void BackendBuffer::copy_from_host(const void* src, size_t bytes) {
  if (bytes > bytes_) {
    throw std::invalid_argument("BackendBuffer::copy_from_host: " + std::to_string(bytes) +
                                " bytes into a buffer of " + std::to_string(bytes_));
  }
  if (bytes == 0) return;
  if (backend_ == Backend::kCuda) {
    device_copy_from_host(data_, src, bytes);
  } else {
    std::memcpy(data_, src, bytes);
  }
}

void copy_to_host(Backend backend, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (backend == Backend::kCuda) {
    device_copy_to_host(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace dsv4::opt
