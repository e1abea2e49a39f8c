// Host backend: the kernels/ row logic run on the CPU, so CI exercises it without a GPU.
#pragma once
#include "optimized/builder.h"

namespace dsv4::opt {

std::unique_ptr<MixedSparseIndicesBuilder> make_host_builder();

}  // namespace dsv4::opt
