// CUDA backend. Declared in every build; without CUDA support compiled in,
// cuda_device_present() is false and make_cuda_builder throws std::runtime_error.
#pragma once
#include "optimized/builder.h"

namespace dsv4::opt {

// True when the CUDA backend is compiled in and a device is visible.
bool cuda_device_present();
// `stream` is a cudaStream_t (nullptr = the legacy default stream); builds are ordered on it.
std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream = nullptr);

}  // namespace dsv4::opt
