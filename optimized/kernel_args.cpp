#include "optimized/kernel_args.h"

#include <cstdint>

namespace dsv4::opt {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

kernels::BlockTableView table_view(const PagedCacheView& cache) {
  return kernels::BlockTableView::make(cache.block_table, cache.num_rows, cache.blocks_per_row, cache.block_size,
                                       cache.row_stride > 0 ? cache.row_stride : cache.blocks_per_row,
                                       cache.block_span > 0 ? cache.block_span : cache.block_size,
                                       cache.base_offset);
}

// A compressed cache is given when it has a table or a block size (an empty table may have no
// pointer); otherwise compressed lookups use the SWA cache (SPEC §2).
bool has_compressed_cache(const BuildRequest& r) {
  return r.compressed.block_table != nullptr || r.compressed.block_size != 0;
}

}  // namespace

kernels::MixedSparseIndicesArgs make_mixed_sparse_indices_args(const BuildRequest& r, const BuiltIndices& out,
                                                               unsigned long long* content_errors) {
  int32_t* sparse_indices = out.sparse_indices;
  kernels::MixedSparseIndicesArgs a{};
  a.window = r.window;
  a.ratio = r.ratio;
  a.topk = r.topk;
  a.num_requests = r.num_requests;
  a.num_tokens = r.num_tokens;
  a.num_decode_tokens = r.num_decode_tokens;
  a.row_width = output_width(r);
  a.num_rows = output_rows(r);
  a.run_time_sizes = r.run_time_sizes;
  a.prefill_rows = r.prefill_topk.rows;

  a.decode_swa_indices = r.decode_swa_indices.data;
  a.decode_swa_stride = r.decode_swa_indices.row_stride;
  a.decode_width = r.decode_compressed.cols;
  a.decode_compressed = a.decode_width > 0 ? r.decode_compressed.data : nullptr;
  a.decode_compressed_stride = r.decode_compressed.row_stride;
  a.decode_local = r.decode_local;
  a.decode_compressed_lens = r.decode_compressed_lens;
  a.decode_valid = r.decode_valid;
  a.prefill_width = r.prefill_topk.cols;
  a.prefill_topk = a.prefill_width > 0 ? r.prefill_topk.data : nullptr;
  a.prefill_topk_stride = r.prefill_topk.row_stride;

  a.query_start_loc = r.query_start_loc;
  a.seq_lens = r.seq_lens;
  a.token_to_req = r.token_to_req;
  a.token_plan_in = r.token_plan;
  a.token_plan_out = r.write_token_plan ? out.token_plan : nullptr;
  a.swa = table_view(r.swa);
  a.compressed = has_compressed_cache(r) ? table_view(r.compressed) : a.swa;
  a.power_of_two_blocks = a.swa.power_of_two && a.compressed.power_of_two;

  a.sparse_indices = sparse_indices;
  a.output_stride = static_cast<int32_t>(out.row_stride);  // validated to fit int32
  a.sparse_lens = r.part == RowPart::kWindow ? nullptr : out.sparse_lens;
  a.content_errors = content_errors;
  // SPEC §8: the columns of each combined row the part writes, and where.
  const bool compressed_only = r.part == RowPart::kCompressed || r.part == RowPart::kTail;
  a.first_column = compressed_only ? r.window : 0;
  a.end_column = r.part == RowPart::kWindow ? r.window : a.row_width;
  a.output_shift = r.part == RowPart::kCompressed ? r.window : 0;
  a.length_offset = r.part == RowPart::kCompressed ? r.window : 0;

  // Rows start 16-byte aligned when the base is and the row stride is a multiple of 4
  // elements; the vector path needs W % 4 == 0 so that no chunk straddles the two parts, and
  // a row width W + P_cap that is a multiple of 4 (P is, P_cap need not be) so that its chunks
  // cover the row and end with it. Anything else (odd widths, offset views) takes the scalar path.
  const auto rows_aligned = [](const Int32Matrix& m) {  // an empty matrix is never read
    return m.rows == 0 || m.cols == 0 || (aligned16(m.data) && m.row_stride % 4 == 0);
  };
  a.vector_path = r.window % 4 == 0 && a.row_width % 4 == 0 && aligned16(sparse_indices) && out.row_stride % 4 == 0 &&
                  rows_aligned(r.decode_swa_indices) &&
                  rows_aligned(r.decode_compressed) && rows_aligned(r.prefill_topk);
  return a;
}



OutputLayout output_layout(const BuildRequest& request) {
  OutputLayout layout;
  layout.num_tokens = output_rows(request);
  layout.width = part_output_width(request);
  const size_t index_bytes = static_cast<size_t>(layout.num_tokens) *
                             static_cast<size_t>(layout.width) * sizeof(int32_t);
  layout.lens_offset_bytes = (index_bytes + 255) / 256 * 256;
  layout.total_bytes =
      layout.lens_offset_bytes + static_cast<size_t>(layout.num_tokens) * sizeof(int32_t);
  if (request.write_token_plan && request.output.token_plan != nullptr) {
    layout.caller_token_plan = request.output.token_plan;
  } else if (request.write_token_plan) {
    layout.token_plan_offset_bytes = (layout.total_bytes + 255) / 256 * 256;
    layout.total_bytes =
        layout.token_plan_offset_bytes + static_cast<size_t>(request.num_tokens) * sizeof(TokenPlanEntry);
  }
  if (layout.num_tokens == 0) layout.total_bytes = 0;
  return layout;
}

BuiltIndices place_outputs(const OutputLayout& layout, void* memory) {
  BuiltIndices out;
  out.num_tokens = layout.num_tokens;
  out.width = layout.width;
  out.row_stride = layout.width;
  out.token_plan = layout.caller_token_plan;
  if (memory == nullptr) return out;
  char* base = static_cast<char*>(memory);
  out.sparse_indices = reinterpret_cast<int32_t*>(base);
  out.sparse_lens = reinterpret_cast<int32_t*>(base + layout.lens_offset_bytes);
  if (layout.token_plan_offset_bytes != 0) {
    out.token_plan = reinterpret_cast<TokenPlanEntry*>(base + layout.token_plan_offset_bytes);
  }
  return out;
}

BuiltIndices caller_outputs(const BuildRequest& request) {
  BuiltIndices out;
  out.sparse_indices = request.output.sparse_indices;
  out.sparse_lens = request.output.sparse_lens;
  out.num_tokens = output_rows(request);
  out.width = part_output_width(request);
  out.row_stride = request.output.row_stride;
  out.token_plan = request.write_token_plan ? request.output.token_plan : nullptr;
  return out;
}

}  // namespace dsv4::opt
