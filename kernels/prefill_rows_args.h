// The argument of an unchecked build of prefill rows only (host sizes, power-of-two blocks,
// 16-byte path: every prefill-only build of a production step, whole or a SPEC §8 part): the
// fields of MixedSparseIndicesArgs such a build reads, 192 bytes instead of 368. Like DecodeChunkArgs
// (decode_chunk_args.h), whose short argument made the decode builds launched alone 0.14-0.35
// us faster on an H200.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/power_of_two_table.h"
#include "kernels/token_plan.h"

namespace dsv4::kernels {

struct PrefillRowsArgs {
  const int32_t* prefill_topk;
  const int32_t* query_start_loc;
  const int32_t* seq_lens;
  const int32_t* token_to_req;
  const TokenPlanEntry* token_plan_in;
  TokenPlanEntry* token_plan_out;
  int32_t* sparse_indices;
  int32_t* sparse_lens;
  unsigned long long* content_errors;
  int64_t prefill_topk_stride;
  PowerOfTwoTable swa;
  PowerOfTwoTable compressed;
  int32_t window, ratio, topk, num_requests, num_tokens, row_width, prefill_width, output_stride;
  int32_t first_column, end_column, output_shift, length_offset;  // SPEC §8 part (whole row: 0, row_width, 0, 0)

  // `a` is a build of prefill rows only on the power-of-two, 16-byte path.
  DSV4_HD static PrefillRowsArgs of(const MixedSparseIndicesArgs& a) {
    return PrefillRowsArgs{a.prefill_topk, a.query_start_loc, a.seq_lens, a.token_to_req, a.token_plan_in,
                           a.token_plan_out, a.sparse_indices, a.sparse_lens, a.content_errors,
                           a.prefill_topk_stride, PowerOfTwoTable::of(a.swa), PowerOfTwoTable::of(a.compressed),
                           a.window, a.ratio, a.topk, a.num_requests, a.num_tokens, a.row_width, a.prefill_width,
                           a.output_stride, a.first_column, a.end_column, a.output_shift, a.length_offset};
  }

  // The build these arguments describe, as the row logic reads it: no decode row, both tables
  // on their shift/mask path.
  DSV4_HD MixedSparseIndicesArgs expand() const {
    MixedSparseIndicesArgs a{};
    a.window = window;
    a.ratio = ratio;
    a.topk = topk;
    a.num_requests = num_requests;
    a.num_tokens = a.num_rows = a.prefill_rows = num_tokens;
    a.row_width = row_width;
    a.prefill_topk = prefill_topk;
    a.prefill_topk_stride = prefill_topk_stride;
    a.prefill_width = prefill_width;
    a.query_start_loc = query_start_loc;
    a.seq_lens = seq_lens;
    a.token_to_req = token_to_req;
    a.token_plan_in = token_plan_in;
    a.token_plan_out = token_plan_out;
    a.swa = swa.view(num_requests);
    a.compressed = compressed.view(num_requests);
    a.sparse_indices = sparse_indices;
    a.output_stride = output_stride;
    a.sparse_lens = sparse_lens;
    a.first_column = first_column;
    a.end_column = end_column;
    a.output_shift = output_shift;
    a.length_offset = length_offset;
    a.content_errors = content_errors;
    a.power_of_two_blocks = true;
    a.vector_path = true;
    return a;
  }
};

static_assert(std::is_trivially_copyable_v<PrefillRowsArgs> && std::is_standard_layout_v<PrefillRowsArgs>,
              "kernel arguments must be a POD");
static_assert(sizeof(PrefillRowsArgs) <= 192, "the point of PrefillRowsArgs is a short launch argument");

}  // namespace dsv4::kernels
