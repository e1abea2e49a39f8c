// Builds without CUDA: the CUDA backend is declared but absent.
#include <stdexcept>
#include <string>

#include "optimized/cuda_builder.h"
#include "optimized/device_memory.h"

namespace dsv4::opt {
namespace {

[[noreturn]] void no_cuda(const char* what) {
  throw std::runtime_error(std::string(what) + ": this build has no CUDA support (DSV4_CUDA=OFF)");
}

}  // namespace

bool cuda_device_present() { return false; }

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* /*stream*/) {
  no_cuda("make_cuda_builder");
}

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* /*stream*/,
                                                             size_t /*workspace_bytes*/) {
  no_cuda("make_cuda_builder");
}

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* /*stream*/,
                                                             size_t /*workspace_bytes*/,
                                                             kernels::LaunchShape /*forced_shape*/) {
  no_cuda("make_cuda_builder");
}

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* /*stream*/,
                                                             const CudaBuilderOptions& /*options*/) {
  no_cuda("make_cuda_builder");
}

void require_device_memory() { no_cuda("CUDA backend memory"); }
void* device_allocate(size_t /*bytes*/) { no_cuda("device_allocate"); }
void device_release(void* /*p*/) noexcept {}
void device_copy_from_host(void* /*dst*/, const void* /*src*/, size_t /*bytes*/) {
  no_cuda("device_copy_from_host");
}
void device_copy_to_host(void* /*dst*/, const void* /*src*/, size_t /*bytes*/) {
  no_cuda("device_copy_to_host");
}

}  // namespace dsv4::opt
