// 256-byte aligned host allocations (the alignment cudaMalloc gives), shared by the host
// builder's arena and host BackendBuffers so both backends see the same vector-path choices.
#pragma once
#include <cstddef>

namespace dsv4::opt {

void* allocate_host(size_t bytes);     // throws std::bad_alloc
void release_host(void* p) noexcept;  // null is fine

}  // namespace dsv4::opt
