// The one place where a BuildRequest becomes the kernels' POD argument struct, and where a
// build's outputs are placed in its workspace memory (shared by both backends).
#pragma once
#include <cstddef>

#include "kernels/mixed_sparse_indices_args.h"
#include "optimized/build_request.h"

namespace dsv4::opt {

// `request` must have passed validate_request_shape. Outputs: sparse_indices T x (W + P),
// sparse_lens T; content_errors: the device counter (CUDA) or null (host).
kernels::MixedSparseIndicesArgs make_mixed_sparse_indices_args(const BuildRequest& request,
                                                      int32_t* sparse_indices, int32_t* sparse_lens,
                                                      unsigned long long* content_errors);

// One build's outputs inside one arena allocation: sparse_indices (T x width), then
// sparse_lens (T) at the next 256-byte boundary.
struct OutputLayout {
  int32_t num_tokens = 0;
  int32_t width = 0;  // W + P
  size_t lens_offset_bytes = 0;
  size_t total_bytes = 0;  // 0 when T == 0
};
OutputLayout output_layout(const BuildRequest& request);
// `memory`: total_bytes from an arena (null when total_bytes is 0).
BuiltIndices place_outputs(const OutputLayout& layout, void* memory);

}  // namespace dsv4::opt
