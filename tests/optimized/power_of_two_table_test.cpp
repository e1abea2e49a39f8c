// PowerOfTwoTable (kernels/power_of_two_table.h), the block table as the short launch
// arguments carry it: cut from the view the builder makes and expanded back in the kernel.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/power_of_two_table.h"

namespace dsv4::kernels {
namespace {

// Every field the shift/mask path reads comes back as BlockTableView::make computed it, the
// index bound min(blocks per row, 2^31 / B) on both of its sides, for every power-of-two B.
TEST(PowerOfTwoTable, ViewGivesBackTheFieldsOfTheTableItWasCutFrom) {
  static const int32_t table[1] = {0};
  for (int log2 = 0; log2 <= 30; ++log2) {
    const int32_t b = int32_t{1} << log2;
    const int64_t index_blocks = (int64_t{1} << 31) >> log2;
    for (int64_t blocks : {int64_t{0}, int64_t{1}, int64_t{7}, index_blocks - 1, index_blocks, index_blocks + 1,
                           int64_t{INT32_MAX}}) {
      if (blocks > INT32_MAX) continue;
      const auto per_row = static_cast<int32_t>(blocks);
      const BlockTableView want = BlockTableView::make(table, 5, per_row, b, int64_t{per_row} + 3, b, 0);
      ASSERT_TRUE(want.power_of_two) << "B " << b;
      const BlockTableView got = PowerOfTwoTable::of(want).view(5);
      const std::string where = "B " + std::to_string(b) + " blocks per row " + std::to_string(per_row);
      EXPECT_EQ(got.table, want.table) << where;
      EXPECT_EQ(got.num_rows, want.num_rows) << where;
      EXPECT_EQ(got.blocks_per_row, want.blocks_per_row) << where;
      EXPECT_EQ(got.block_size, want.block_size) << where;
      EXPECT_EQ(got.row_stride, want.row_stride) << where;
      EXPECT_EQ(got.block_span, want.block_span) << where;
      EXPECT_EQ(got.base_offset, want.base_offset) << where;
      EXPECT_EQ(got.power_of_two, want.power_of_two) << where;
      EXPECT_EQ(got.log2_block_size, want.log2_block_size) << where;
      EXPECT_EQ(got.max_safe_block, want.max_safe_block) << where;
      EXPECT_EQ(got.index_block_bound, want.index_block_bound) << where;
    }
  }
}

}  // namespace
}  // namespace dsv4::kernels
