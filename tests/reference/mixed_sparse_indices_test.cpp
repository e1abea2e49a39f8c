// build_mixed_sparse_indices (SPEC §3, §4) against outputs worked out by hand: every case of
// harness/hand_cases.cpp, whose comments show the arithmetic. The optimized backends are
// tested against the same outputs (tests/optimized/builder_test.cpp).
#include <gtest/gtest.h>

#include "harness/hand_cases.h"
#include "reference/mixed_sparse_indices.h"
#include "support/assertions.h"

namespace dsv4::ref {
namespace {

using testing::same_matrix;
using testing::same_vector;

TEST(PaddedCompressedWidth, RoundsMaxOfTopkAndDecodeWidthUpToFour) {
  EXPECT_EQ(padded_compressed_width(0, 0), 0);
  EXPECT_EQ(padded_compressed_width(1, 0), 4);
  EXPECT_EQ(padded_compressed_width(4, 0), 4);
  EXPECT_EQ(padded_compressed_width(5, 0), 8);
  EXPECT_EQ(padded_compressed_width(0, 5), 8);
  EXPECT_EQ(padded_compressed_width(5, 3), 8);
  EXPECT_EQ(padded_compressed_width(2, 9), 12);
  EXPECT_EQ(padded_compressed_width(8192, 0), 8192);
  EXPECT_EQ(padded_compressed_width(1024, 1023), 1024);
}

TEST(MixedSparseIndices, HandCasesGiveTheWorkedOutputs) {
  for (const harness::HandCase& c : harness::hand_cases()) {
    const BuilderOutput out = build_mixed_sparse_indices(c.inputs);
    EXPECT_TRUE(same_matrix(c.expected.sparse_indices, out.sparse_indices)) << c.name;
    EXPECT_TRUE(same_vector(c.expected.sparse_lens, out.sparse_lens)) << c.name;
    EXPECT_EQ(out.content_errors, c.expected.content_errors) << c.name;
  }
}

}  // namespace
}  // namespace dsv4::ref
