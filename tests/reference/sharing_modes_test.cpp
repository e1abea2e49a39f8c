// SPEC §8's outputs from SPEC §3's on hand-worked cases: the split form is the combined matrix
// cut at column W with lens - W; the shared SWA segment (the SWA-only build of a layer's window
// inputs) is the first W columns of every layer's output. The same on random builds:
// tests/harness/sharing_modes_test.cpp.
#include <gtest/gtest.h>

#include "harness/hand_cases.h"
#include "reference/sharing_modes.h"
#include "support/assertions.h"

namespace dsv4::ref {
namespace {

using harness::mat;
using harness::vec;
using testing::same_matrix;
using testing::same_vector;

// The tiny C4A batch (harness/hand_cases.h):
//   t0: 5 6 -1 -1 | 2 -1 -1 -1        len 5
//   t1: 133 134 135 136 | 4 5 -1 -1   len 6
//   t2: 134 135 136 137 | 5 6 -1 -1   len 6
TEST(SplitOutput, CutsTheTinyC4aBatchAtTheWindow) {
  const SplitOutput split = split_output(build_mixed_sparse_indices(harness::tiny_c4a()), 4);
  EXPECT_TRUE(same_matrix(mat(3, 4, {5, 6, -1, -1, 133, 134, 135, 136, 134, 135, 136, 137}), split.swa_indices));
  EXPECT_TRUE(same_matrix(mat(3, 4, {2, -1, -1, -1, 4, 5, -1, -1, 5, 6, -1, -1}), split.compressed_indices));
  EXPECT_TRUE(same_vector(vec({1, 2, 2}), split.compressed_lens));
}

TEST(SplitOutput, OfASwaOnlyLayerHasNoCompressedColumnsAndZeroLengths) {
  const SplitOutput split = split_output(build_mixed_sparse_indices(harness::tiny_swa_only()), 4);
  EXPECT_EQ(split.swa_indices.cols(), 4);
  EXPECT_EQ(split.compressed_indices.rows(), 3);
  EXPECT_EQ(split.compressed_indices.cols(), 0);
  EXPECT_TRUE(same_vector(vec({0, 0, 0}), split.compressed_lens));
}

// SPEC §7's rows that are not built (padding rows [T, T_cap), rows whose metadata breaks the
// checks) have length 0, in the combined form and in each segment: compressed_lens 0, not -W.
TEST(SplitOutput, ARowNotBuiltHasLengthZeroInTheCompressedSegment) {
  BuilderOutput combined;
  combined.sparse_indices = mat(2, 6, {5, 6, 7, 8, 2, -1, -1, -1, -1, -1, -1, -1});
  combined.sparse_lens = vec({5, 0});
  const SplitOutput split = split_output(combined, 4);
  EXPECT_TRUE(same_vector(vec({1, 0}), split.compressed_lens));
  EXPECT_TRUE(same_matrix(mat(2, 2, {2, -1, -1, -1}), split.compressed_indices));
}

TEST(SplitOutput, RejectsAWindowOutsideTheColumns) {
  const BuilderOutput out = build_mixed_sparse_indices(harness::tiny_c4a());
  EXPECT_THROW(split_output(out, 9), std::invalid_argument);
  EXPECT_THROW(split_output(out, -1), std::invalid_argument);
  EXPECT_EQ(split_output(out, 8).compressed_indices.cols(), 0);
}

TEST(WindowSegment, OfTheTinyBatchIsItsSwaOnlyLayer) {
  for (const BuilderInputs& in : {harness::tiny_c4a(), harness::tiny_c128a(), harness::tiny_swa_only()}) {
    const BuilderOutput segment = build_mixed_sparse_indices(window_segment_inputs(in));
    const BuilderOutput swa_only = build_mixed_sparse_indices(harness::tiny_swa_only());
    EXPECT_TRUE(same_matrix(swa_only.sparse_indices, segment.sparse_indices));
    EXPECT_TRUE(same_vector(swa_only.sparse_lens, segment.sparse_lens));
  }
}

}  // namespace
}  // namespace dsv4::ref
