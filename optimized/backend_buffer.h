// An owning int32/uint8 buffer in a backend's memory space, for callers (tests, harness,
// benchmarks) that stage host data for a backend. Not used on the per-layer path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "optimized/builder.h"

namespace dsv4::opt {

class BackendBuffer {
 public:
  BackendBuffer() = default;
  BackendBuffer(Backend backend, size_t bytes);  // CUDA: cudaMalloc; throws on failure
  ~BackendBuffer();
  BackendBuffer(BackendBuffer&&) noexcept;
  BackendBuffer& operator=(BackendBuffer&&) noexcept;
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;

  template <class T> static BackendBuffer upload(Backend backend, const std::vector<T>& host) {
    BackendBuffer b(backend, host.size() * sizeof(T));
    b.copy_from_host(host.data(), host.size() * sizeof(T));
    return b;
  }
  void copy_from_host(const void* src, size_t bytes);
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Backend backend() const { return backend_; }

 private:
  Backend backend_ = Backend::kHost;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Copies `bytes` from backend memory `src` to host `dst` (CUDA: synchronous cudaMemcpy).
void copy_to_host(Backend backend, void* dst, const void* src, size_t bytes);

}  // namespace dsv4::opt
