// The argument of an unchecked build of prefill rows only (host sizes, power-of-two blocks,
// 16-byte path: every prefill-only build of a production step, whole or a SPEC §8 part): the
// fields of MixedSparseIndicesArgs such a build reads, 192 bytes instead of 368, as
// DecodeChunkArgs does for decode builds (decode_chunk_args.h). On an H200 the prefill-only
// builds took 0.13-0.33 us less with it (bench/results/2026-12-03-h200-compact-prefill-args-trial/);
// an empty kernel's launch costs ~0.22 us more between 160 and 368 bytes of argument.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/power_of_two_table.h"
#include "kernels/row_output.h"
#include "kernels/token_plan.h"

namespace dsv4::kernels {

struct PrefillRowsArgs {
  const int32_t* prefill_topk;
  const int32_t* query_start_loc;
  const int32_t* seq_lens;
  const int32_t* token_to_req;
  const TokenPlanEntry* token_plan_in;
  TokenPlanEntry* token_plan_out;
  int64_t prefill_topk_stride;
  PowerOfTwoTable swa;
  PowerOfTwoTable compressed;
  RowOutput out;
  int32_t window, ratio, topk, num_requests, num_tokens, row_width, prefill_width, output_stride;

  // `a` is a build of prefill rows only on the power-of-two, 16-byte path.
  DSV4_HD static PrefillRowsArgs of(const MixedSparseIndicesArgs& a) {
    return PrefillRowsArgs{a.prefill_topk, a.query_start_loc, a.seq_lens, a.token_to_req, a.token_plan_in,
                           a.token_plan_out, a.prefill_topk_stride, PowerOfTwoTable::of(a.swa),
                           PowerOfTwoTable::of(a.compressed), RowOutput::of(a), a.window, a.ratio, a.topk,
                           a.num_requests, a.num_tokens, a.row_width, a.prefill_width, a.output_stride
    };
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
    a.output_stride = output_stride;
    out.expand_into(a);
    a.power_of_two_blocks = true;
    a.vector_path = true;
    return a;
  }
};

static_assert(std::is_trivially_copyable_v<PrefillRowsArgs> && std::is_standard_layout_v<PrefillRowsArgs>,
              "kernel arguments must be a POD");
static_assert(sizeof(PrefillRowsArgs) <= 192, "the point of PrefillRowsArgs is a short launch argument");

}  // namespace dsv4::kernels
