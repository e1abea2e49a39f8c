#include "optimized/host_memory.h"

#include <new>

namespace dsv4::opt {

void* allocate_host(size_t bytes) { return ::operator new(bytes, std::align_val_t{256}); }

void release_host(void* p) noexcept {
  if (p != nullptr) ::operator delete(p, std::align_val_t{256});
}

}  // namespace dsv4::opt
