// The one place where a BuildRequest becomes the kernels' POD argument struct, and where a
// build's outputs are placed in its workspace memory (shared by both backends).
#pragma once
#include <cstddef>

#include "kernels/mixed_sparse_indices_args.h"
#include "optimized/build_request.h"

namespace dsv4::opt {

// `request` must have passed validate_request_shape. `out`: where the build writes (T_cap rows
// of W + P_cap columns at out.row_stride); content_errors: the device counter (CUDA) or null
// (host).
kernels::MixedSparseIndicesArgs make_mixed_sparse_indices_args(const BuildRequest& request, const BuiltIndices& out,
                                                               unsigned long long* content_errors);

// One build's outputs inside one arena allocation: sparse_indices (T_cap x width, dense), then
// sparse_lens (T_cap) at the next 256-byte boundary (allocated for every part: a window build
// makes the buffer that tail builds write their lengths into), then the token plan it writes.
struct OutputLayout {
  int32_t num_tokens = 0;
  int32_t width = 0;  // part_output_width: W + P_cap, or P_cap for a split compressed segment
  size_t lens_offset_bytes = 0;
  // write_token_plan: the caller's output.token_plan, or T entries at token_plan_offset_bytes
  // (the next 256-byte boundary); else null and 0.
  TokenPlanEntry* caller_token_plan = nullptr;
  size_t token_plan_offset_bytes = 0;
  size_t total_bytes = 0;  // 0 when T == 0
};
OutputLayout output_layout(const BuildRequest& request);
// `memory`: total_bytes from an arena (null when total_bytes is 0).
BuiltIndices place_outputs(const OutputLayout& layout, void* memory);
// The caller-owned outputs of `request` (request.output.sparse_indices non-null; SPEC §7).
BuiltIndices caller_outputs(const BuildRequest& request);
// Whether `request` writes into caller-owned outputs (SPEC §7) rather than the workspace.
inline bool writes_caller_outputs(const BuildRequest& request) { return request.output.sparse_indices != nullptr; }

}  // namespace dsv4::opt
