// SPEC §4 content errors: a lookup the build itself finds invalid is written as -1 and counted;
// everything else of the build is unchanged. Base case: the tiny C4A batch, whose valid
// output is
//   t0: 5 6 -1 -1 | 2 -1 -1 -1        len 5
//   t1: 133 134 135 136 | 4 5 -1 -1   len 6
//   t2: 134 135 136 137 | 5 6 -1 -1   len 6
// (compressed table [[0, 1], [2, 3]], block size 2, so NBc = 2 blocks = local indices 0..3).
#include <gtest/gtest.h>

#include "reference/mixed_sparse_indices.h"
#include "tests/reference/tiny_batch.h"

namespace dsv4::ref {
namespace {

using testing::mat;
using testing::same_matrix;
using testing::same_vector;
using testing::vec;

// t2 picks local 4: block 4 / 2 = 2 >= NBc = 2 -> -1, one error; len still W + topk_len = 6.
TEST(ContentErrors, PrefillCompressedBlockPastTableWidth) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.prefill_topk = mat(2, 2, {0, 1,  //
                               1, 4});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,        //
                                     133, 134, 135, 136, 4, 5, -1, -1,   //
                                     134, 135, 136, 137, 5, -1, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 6, 6}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 1);
}

// Request 1's compressed block 1 is -1: t2's local 2 (block 1) -> -1, one error.
TEST(ContentErrors, PrefillCompressedNegativeTableEntry) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.compressed->block_table = mat(2, 2, {0, 1,  //
                                          2, -1});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,        //
                                     133, 134, 135, 136, 4, 5, -1, -1,   //
                                     134, 135, 136, 137, 5, -1, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 6, 6}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 1);
}

// The decode token's local 6 lies in block 3 >= NBc = 2 -> -1, one error; it still counts as a
// pick (v >= 0), so len stays W + 1 = 5.
TEST(ContentErrors, DecodeLocalBlockPastTableWidth) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.decode_compressed = mat(1, 2, {6, -1});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(1, 8, {5, 6, -1, -1, -1, -1, -1, -1}),
                          out.sparse_indices.topRows(1)));
  EXPECT_EQ(out.sparse_lens(0), 5);
  EXPECT_EQ(out.content_errors, 1);
}

// A negative SWA table entry hit by prefill tokens: request 1's block 0 is -1, and all 8 window
// lookups of t1 (5..8) and t2 (6..9) land in block 0 -> 8 errors, the windows all -1.
TEST(ContentErrors, PrefillSwaNegativeTableEntry) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.swa.block_table = mat(2, 2, {0, 1,  //
                                  -1, 3});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,      //
                                     -1, -1, -1, -1, 4, 5, -1, -1,     //
                                     -1, -1, -1, -1, 5, 6, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 6, 6}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 8);
}

// A slot that does not fit int32 (table entry 2^30 * block size 2 = 2^31) is a content error
// too: request 1's block 0 -> t1's locals 0, 1 and t2's local 1 -> 3 errors.
TEST(ContentErrors, SlotBeyondInt32) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.compressed->block_table = mat(2, 2, {0, 1,  //
                                          1 << 30, 3});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,          //
                                     133, 134, 135, 136, -1, -1, -1, -1,   //
                                     134, 135, 136, 137, -1, 6, -1, -1}),
                          out.sparse_indices));
  EXPECT_EQ(out.content_errors, 3);
}

// Decode SWA indices are copied, not looked up: odd values pass through, no error.
TEST(ContentErrors, DecodeSwaIndicesAreCopiedWithoutLookup) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.decode_swa_indices = mat(1, 4, {5, 999999, -7, -1});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(1, 8, {5, 999999, -7, -1, 2, -1, -1, -1}),
                          out.sparse_indices.topRows(1)));
  EXPECT_EQ(out.content_errors, 0);
}

// Global decode slots are written as-is: no table is read, so nothing can be an error.
TEST(ContentErrors, GlobalDecodeSlotsAreNeverLookedUp) {
  BuilderInputs in = testing::tiny_batch_c128a();
  in.decode_compressed = mat(1, 2, {123456, -3});
  in.compressed->block_table = mat(2, 2, {-1, -1, -1, -1});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(1, 8, {5, 6, -1, -1, 123456, -3, -1, -1}),
                          out.sparse_indices.topRows(1)));
  EXPECT_EQ(out.content_errors, 0);  // prefill topk_len is 0 at positions 8, 9 (ratio 128)
}

// Picks past topk_len are never looked up, so a bad index there is no error.
TEST(ContentErrors, PicksPastTopkLenAreNotLookedUp) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.topk = 1;  // P = 4 still; topk_len = min(2, 1) = 1
  in.prefill_topk = mat(2, 2, {0, 99,  //
                               1, 99});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,         //
                                     133, 134, 135, 136, 4, -1, -1, -1,   //
                                     134, 135, 136, 137, 5, -1, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 5, 5}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

}  // namespace
}  // namespace dsv4::ref
