// Where a build writes (SPEC §3's outputs, the columns of its SPEC §8 part) and counts content
// errors, as the short launch arguments carry it (decode_chunk_args.h, prefill_rows_args.h):
// 40 bytes.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_args.h"

namespace dsv4::kernels {

struct RowOutput {
  int32_t* sparse_indices;
  int32_t* sparse_lens;
  unsigned long long* content_errors;
  int32_t first_column, end_column, output_shift, length_offset;  // SPEC §8 part (whole row: 0, row_width, 0, 0)

  DSV4_HD static RowOutput of(const MixedSparseIndicesArgs& a) {
    return RowOutput{a.sparse_indices, a.sparse_lens, a.content_errors, a.first_column, a.end_column, a.output_shift,
                     a.length_offset};
  }

  // Puts these fields back into `a` (the rest of `a` is the caller's).
  DSV4_HD void expand_into(MixedSparseIndicesArgs& a) const {
    a.sparse_indices = sparse_indices;
    a.sparse_lens = sparse_lens;
    a.content_errors = content_errors;
    a.first_column = first_column;
    a.end_column = end_column;
    a.output_shift = output_shift;
    a.length_offset = length_offset;
  }
};

}  // namespace dsv4::kernels
