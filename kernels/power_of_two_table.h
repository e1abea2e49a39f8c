// A paged cache's block table on the kernels' shift/mask path (BlockTableView::power_of_two: B
// a power of two, no span, no offset), as the short launch arguments carry it: 32 bytes
// instead of BlockTableView's 72, the rest derived on the device.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_args.h"

namespace dsv4::kernels {

struct PowerOfTwoTable {
  const int32_t* table;
  int64_t row_stride;
  int32_t blocks_per_row;
  int32_t block_size;
  uint32_t log2_block_size;
  uint32_t max_safe_block;

  DSV4_HD static PowerOfTwoTable of(const BlockTableView& v) {
    return PowerOfTwoTable{v.table, v.row_stride, v.blocks_per_row, v.block_size, v.log2_block_size, v.max_safe_block};
  }

  // The view the row logic reads on that path (num_rows: the rows a build may look up; no
  // divider, the shift/mask path needs none).
  DSV4_HD BlockTableView view(int32_t num_rows) const {
    BlockTableView v{};
    v.table = table;
    v.num_rows = num_rows;
    v.blocks_per_row = blocks_per_row;
    v.block_size = block_size;
    v.row_stride = row_stride;
    v.block_span = block_size;
    v.power_of_two = true;
    v.log2_block_size = log2_block_size;
    v.max_safe_block = max_safe_block;
    const uint32_t index_blocks = (uint32_t{1} << 31) >> log2_block_size;  // 2^31 / B
    v.index_block_bound = static_cast<uint32_t>(blocks_per_row) < index_blocks ? static_cast<uint32_t>(blocks_per_row)
                                                                              : index_blocks;
    return v;
  }
};

}  // namespace dsv4::kernels
