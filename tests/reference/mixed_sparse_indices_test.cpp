// Hand-worked cases of build_mixed_sparse_indices (SPEC §3). Every expected matrix below was
// computed by hand from the spec's formulas; the comments show the arithmetic.
#include <gtest/gtest.h>

#include "reference/mixed_sparse_indices.h"
#include "tests/reference/tiny_batch.h"

namespace dsv4::ref {
namespace {

using testing::mat;
using testing::same_matrix;
using testing::same_vector;
using testing::vec;

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

// Tiny batch, SWA-only layer (ratio 1, topk 0 -> P = 0, width 4).
// t = 0 (decode): the SWA row is copied as-is; sparse_len = W + 0 = 4.
// t = 1 (pos 8): swa_len = min(9, 4) = 4, start = 5; slots = table[1][i / 64] * 64 + i % 64
//   = 2 * 64 + {5, 6, 7, 8} = 133..136.  t = 2 (pos 9): start 6 -> 134..137.
TEST(MixedSparseIndices, TinyBatchSwaOnly) {
  const BuilderOutput out = build_mixed_sparse_indices(testing::tiny_batch_swa_only());
  EXPECT_TRUE(same_matrix(mat(3, 4, {5, 6, -1, -1,            //
                                     133, 134, 135, 136,      //
                                     134, 135, 136, 137}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({4, 4, 4}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// Tiny batch, C128A layer: topk 2, Kd 2 -> P = round_up(2, 4) = 4, width 8.
// t = 0: SWA row, then the global slots 9, 10 written as-is, then -1 -1; len = 4 + lens 2 = 6.
// t = 1, 2 (pos 8, 9): topk_len = min((p + 1) / 128, 2) = min(0, 2) = 0 -> every compressed
//   column is -1 and the local indices are never read; len = 4 + 0 = 4.
TEST(MixedSparseIndices, TinyBatchC128A) {
  const BuilderOutput out = build_mixed_sparse_indices(testing::tiny_batch_c128a());
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 9, 10, -1, -1,            //
                                     133, 134, 135, 136, -1, -1, -1, -1,     //
                                     134, 135, 136, 137, -1, -1, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({6, 4, 4}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// Tiny batch, C4A layer: compressed table [[0, 1], [2, 3]], block size 2.
// t = 0 (request 0): local 2 -> table[0][2 / 2] * 2 + 2 % 2 = 1 * 2 + 0 = 2; -1 stays -1;
//   compressed length = #(v >= 0) = 1 -> len 5.
// t = 1 (pos 8): topk_len = min(9 / 4, 2) = 2: local 0 -> 2 * 2 + 0 = 4, local 1 -> 2 * 2 + 1 = 5.
// t = 2 (pos 9): topk_len = min(10 / 4, 2) = 2: local 1 -> 5, local 2 -> table[1][1] * 2 = 6.
TEST(MixedSparseIndices, TinyBatchC4A) {
  const BuilderOutput out = build_mixed_sparse_indices(testing::tiny_batch_c4a());
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,        //
                                     133, 134, 135, 136, 4, 5, -1, -1,   //
                                     134, 135, 136, 137, 5, 6, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 6, 6}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// No compressed cache given: the SWA table and its block size 64 are used (SPEC §2).
// t = 0: local 2 -> table[0][0] * 64 + 2 = 2.  t = 1: locals 0, 1 -> 2 * 64 + {0, 1} = 128, 129.
// t = 2: locals 1, 2 -> 129, 130.
TEST(MixedSparseIndices, CompressedLookupFallsBackToSwaCache) {
  BuilderInputs in = testing::tiny_batch_c4a();
  in.compressed.reset();
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,            //
                                     133, 134, 135, 136, 128, 129, -1, -1,   //
                                     134, 135, 136, 137, 129, 130, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 6, 6}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// topk 5 -> P = round_up(5, 4) = 8 columns after the window.
// One prefill token at pos 23 (seq_len 24, query length 1). W = 4, ratio 4.
// SWA (block size 8, table [3, 0, 7]): start = 23 - 4 + 1 = 20; i = 20..23 lie in block 2
//   -> 7 * 8 + {4, 5, 6, 7} = 60..63.
// topk_len = min(24 / 4, 5) = 5, so only the first 5 of the Kp = 6 picks are used.
// Compressed (block size 4, table [5, 1]): 0 -> 20, 4 -> 1 * 4 + 0 = 4, 5 -> 5, 7 -> 7,
//   3 -> 5 * 4 + 3 = 23; the 6th pick (2) is past topk_len -> -1; columns 5..7 of P -> -1.
TEST(MixedSparseIndices, TopkFivePadsToEightColumns) {
  BuilderInputs in;
  in.window = 4;
  in.ratio = 4;
  in.topk = 5;
  in.decode_swa_indices = mat(0, 4, {});
  in.prefill_topk = mat(1, 6, {0, 4, 5, 7, 3, 2});
  in.query_start_loc = vec({0, 1});
  in.seq_lens = vec({24});
  in.token_to_req = vec({0});
  in.swa = PagedCache{mat(1, 3, {3, 0, 7}), 8};
  in.compressed = PagedCache{mat(1, 2, {5, 1}), 4};
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(1, 12, {60, 61, 62, 63, 20, 4, 5, 7, 23, -1, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({9}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// All-prefill step (D = 0), positions 1..5 around W = 4 (W-1 = 3, W = 4, W+1 = 5), SWA block
// size 4 with table [2, 0], so i < 4 -> 8 + i and i >= 4 -> 0 * 4 + (i - 4): the window of
// positions 4 and 5 crosses the block boundary.
//   pos 1: swa_len 2, start 0 -> 8, 9, -1, -1
//   pos 2: swa_len 3, start 0 -> 8, 9, 10, -1
//   pos 3: swa_len 4, start 0 -> 8, 9, 10, 11
//   pos 4: swa_len 4, start 1 -> 9, 10, 11, 0
//   pos 5: swa_len 4, start 2 -> 10, 11, 0, 1
// ratio 1, topk 0: P = 0, every len = W + 0 = 4.
TEST(MixedSparseIndices, AllPrefillWindowAroundWAndAcrossSwaBlocks) {
  BuilderInputs in;
  in.window = 4;
  in.ratio = 1;
  in.topk = 0;
  in.decode_swa_indices = mat(0, 4, {});
  in.prefill_topk = mat(5, 0, {});
  in.query_start_loc = vec({0, 5});
  in.seq_lens = vec({6});  // query length 5 -> positions 6 - 5 + {0..4} = 1..5
  in.token_to_req = vec({0, 0, 0, 0, 0});
  in.swa = PagedCache{mat(1, 2, {2, 0}), 4};
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(5, 4, {8, 9, -1, -1,     //
                                     8, 9, 10, -1,     //
                                     8, 9, 10, 11,     //
                                     9, 10, 11, 0,     //
                                     10, 11, 0, 1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({4, 4, 4, 4, 4}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// (p + 1) at and around a multiple of the ratio. W = 2, ratio 4, topk 4; one prefill request,
// seq_len 9, three tokens -> positions 6, 7, 8.
// SWA (block size 16, table [1]) -> 16 + i.  Compressed (block size 2, table [4, 6]):
//   local 0 -> 8, 1 -> 9, 2 -> 12, 3 -> 13.
//   pos 6: topk_len = min(7 / 4, 4) = 1 -> picks [0, 1, 2, 3] give 8, -1, -1, -1; len 3
//   pos 7: topk_len = min(8 / 4, 4) = 2 (8 is a multiple of 4) -> [1, 0, ..] give 9, 8; len 4
//   pos 8: topk_len = min(9 / 4, 4) = 2 -> [0, 1, ..] give 8, 9; len 4
TEST(MixedSparseIndices, TopkLenStepsWhenPositionPlusOneReachesMultipleOfRatio) {
  BuilderInputs in;
  in.window = 2;
  in.ratio = 4;
  in.topk = 4;
  in.decode_swa_indices = mat(0, 2, {});
  in.prefill_topk = mat(3, 4, {0, 1, 2, 3,  //
                               1, 0, 2, 3,  //
                               0, 1, 3, 2});
  in.query_start_loc = vec({0, 3});
  in.seq_lens = vec({9});
  in.token_to_req = vec({0, 0, 0});
  in.swa = PagedCache{mat(1, 1, {1}), 16};
  in.compressed = PagedCache{mat(1, 2, {4, 6}), 2};
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(3, 6, {21, 22, 8, -1, -1, -1,   //
                                     22, 23, 9, 8, -1, -1,    //
                                     23, 24, 8, 9, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({3, 4, 4}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// Kp narrower than topk (SPEC §3: "Kp may differ from topk"). W = 2, ratio 4, topk 4, one
// prefill token at pos 19 (seq_len 20): topk_len = min(20 / 4, 4) = 4 but only Kp = 2 picks.
// SWA (block size 16, table [1, 2]): i = 18, 19 in block 1 -> 2 * 16 + {2, 3} = 34, 35.
// Compressed (block size 2, table [4, 6]): 3 -> 6 * 2 + 1 = 13, 1 -> 4 * 2 + 1 = 9; columns
// j = 2, 3 have no pick -> -1. len = W + topk_len = 6, counting the two -1 entries.
TEST(MixedSparseIndices, FewerPicksThanTopkStillCountsTopkLen) {
  BuilderInputs in;
  in.window = 2;
  in.ratio = 4;
  in.topk = 4;
  in.decode_swa_indices = mat(0, 2, {});
  in.prefill_topk = mat(1, 2, {3, 1});
  in.query_start_loc = vec({0, 1});
  in.seq_lens = vec({20});
  in.token_to_req = vec({0});
  in.swa = PagedCache{mat(1, 2, {1, 2}), 16};
  in.compressed = PagedCache{mat(1, 2, {4, 6}), 2};
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(1, 6, {34, 35, 13, 9, -1, -1}), out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({6}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// C128A prefill after a long context: positions 254, 255 (seq_len 256, two tokens), so
// (p + 1) / 128 = 255 / 128 = 1 and 256 / 128 = 2 (exactly a multiple of 128). W = 2, topk 4.
// SWA (block size 128, table [5, 9]): i = 253..255 lie in block 1 -> 9 * 128 + (i - 128)
//   = 1152 + {125, 126, 127} -> pos 254: 1277, 1278; pos 255: 1278, 1279.
// Compressed (block size 2, table [4, 7]): local 0 -> 8, 1 -> 9.
//   pos 254: topk_len 1 -> only the first pick -> 8 (the second pick, 1, is cut); len 3
//   pos 255: topk_len 2 -> 8, 9; len 4
TEST(MixedSparseIndices, C128APrefillAfterLongContext) {
  BuilderInputs in;
  in.window = 2;
  in.ratio = 128;
  in.topk = 4;
  in.decode_swa_indices = mat(0, 2, {});
  in.prefill_topk = mat(2, 4, {0, 1, -1, -1,  //
                               0, 1, -1, -1});
  in.query_start_loc = vec({0, 2});
  in.seq_lens = vec({256});
  in.token_to_req = vec({0, 0});
  in.swa = PagedCache{mat(1, 2, {5, 9}), 128};
  in.compressed = PagedCache{mat(1, 2, {4, 7}), 2};
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(2, 6, {1277, 1278, 8, -1, -1, -1,  //
                                     1278, 1279, 8, 9, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({3, 4}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// All-decode step (D = T = 2), global form. W = 2, topk 0, Kd 3 -> P = round_up(3, 4) = 4.
// Global slots are written as-is, including -1 and anything after it (20, -1, 7).
BuilderInputs all_decode_global() {
  BuilderInputs in;
  in.window = 2;
  in.ratio = 128;
  in.topk = 0;
  in.decode_swa_indices = mat(2, 2, {1, 2,  //
                                     3, -1});
  in.decode_compressed = mat(2, 3, {10, 11, -1,  //
                                    20, -1, 7});
  in.decode_local = false;
  in.prefill_topk = mat(0, 0, {});
  in.query_start_loc = vec({0, 1, 2});
  in.seq_lens = vec({5, 3});
  in.token_to_req = vec({0, 1});
  in.swa = PagedCache{mat(2, 1, {0, 1}), 8};
  in.compressed = PagedCache{mat(2, 1, {0, 1}), 2};
  return in;
}

// With lens [2, 1]: len = W + lens = 4, 3.
TEST(MixedSparseIndices, AllDecodeGlobalFormWithLens) {
  BuilderInputs in = all_decode_global();
  in.decode_compressed_lens = vec({2, 1});
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(2, 6, {1, 2, 10, 11, -1, -1,  //
                                     3, -1, 20, -1, 7, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({4, 3}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// Without lens the compressed length is Kd = 3 for every token: len = 2 + 3 = 5.
TEST(MixedSparseIndices, AllDecodeGlobalFormWithoutLens) {
  const BuilderOutput out = build_mixed_sparse_indices(all_decode_global());
  EXPECT_TRUE(same_matrix(mat(2, 6, {1, 2, 10, 11, -1, -1,  //
                                     3, -1, 20, -1, 7, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 5}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// Local decode form with a padding token. Request 0 is speculative (tokens 0, 1), request 1
// holds one padding token (token 2, decode_valid 0). W = 2, topk 0, Kd 3 -> P = 4.
// Compressed (block size 4): request 0 table [2, 9], request 1 table [7, 1].
//   t = 0: [0, 3, -1] -> 2 * 4 + 0 = 8, 2 * 4 + 3 = 11, -1; 2 picks -> len 4
//   t = 1: [1, -1, -1] -> 9; 1 pick -> len 3
//   t = 2: [5, 0, -1] -> 1 * 4 + 1 = 5, 7 * 4 + 0 = 28 (SPEC §3 translates regardless of
//          decode_valid); padding -> compressed length 0 -> len 2
BuilderInputs decode_local_with_padding() {
  BuilderInputs in;
  in.window = 2;
  in.ratio = 4;
  in.topk = 0;
  in.decode_swa_indices = mat(3, 2, {4, 5,  //
                                     5, 6,  //
                                     -1, -1});
  in.decode_compressed = mat(3, 3, {0, 3, -1,   //
                                    1, -1, -1,  //
                                    5, 0, -1});
  in.decode_local = true;
  in.decode_valid = std::vector<uint8_t>{1, 1, 0};
  in.prefill_topk = mat(0, 0, {});
  in.query_start_loc = vec({0, 2, 3});
  in.seq_lens = vec({7, 1});
  in.token_to_req = vec({0, 0, 1});
  in.swa = PagedCache{mat(2, 1, {0, 1}), 8};
  in.compressed = PagedCache{mat(2, 2, {2, 9,  //
                                        7, 1}),
                             4};
  return in;
}

TEST(MixedSparseIndices, DecodeLocalFormWithPaddingToken) {
  const BuilderOutput out = build_mixed_sparse_indices(decode_local_with_padding());
  EXPECT_TRUE(same_matrix(mat(3, 6, {4, 5, 8, 11, -1, -1,  //
                                     5, 6, 9, -1, -1, -1,  //
                                     -1, -1, 5, 28, -1, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({4, 3, 2}), out.sparse_lens));
  EXPECT_EQ(out.content_errors, 0);
}

// decode_valid absent = every token valid: token 2 now counts its 2 picks -> len 4.
TEST(MixedSparseIndices, DecodeLocalFormWithoutValidityCountsEveryToken) {
  BuilderInputs in = decode_local_with_padding();
  in.decode_valid.reset();
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_vector(vec({4, 3, 4}), out.sparse_lens));
  EXPECT_EQ(out.sparse_indices(2, 2), 5);
  EXPECT_EQ(out.sparse_indices(2, 3), 28);
}

// Local decode indices below -1 are "no entry" like -1: written -1, not a content error.
TEST(MixedSparseIndices, NegativeLocalIndexIsNoEntryNotAnError) {
  BuilderInputs in = decode_local_with_padding();
  in.decode_compressed(1, 0) = -5;
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_EQ(out.sparse_indices(1, 2), -1);
  EXPECT_EQ(out.sparse_lens(1), 2);  // no pick left for token 1
  EXPECT_EQ(out.content_errors, 0);
}

// T = 0: empty outputs of width W + P = 4 + round_up(5, 4) = 12.
TEST(MixedSparseIndices, EmptyStep) {
  BuilderInputs in;
  in.window = 4;
  in.ratio = 4;
  in.topk = 5;
  in.decode_swa_indices = mat(0, 4, {});
  in.prefill_topk = mat(0, 5, {});
  in.query_start_loc = vec({0});
  in.seq_lens = vec({});
  in.token_to_req = vec({});
  in.swa = PagedCache{mat(0, 0, {}), 64};
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_EQ(out.sparse_indices.rows(), 0);
  EXPECT_EQ(out.sparse_indices.cols(), 12);
  EXPECT_EQ(out.sparse_lens.size(), 0);
  EXPECT_EQ(out.content_errors, 0);
}

// A decode request may hold zero tokens (its query range is empty): still a valid boundary.
// Request 0: decode, one token at pos 0 (seq_len 1); request 1: empty; request 2: prefill,
// one token at pos 0 (seq_len 1) -> window [16 + 0] (block size 16, table [1]), then -1.
TEST(MixedSparseIndices, EmptyRequestInTheMiddle) {
  BuilderInputs in;
  in.window = 2;
  in.ratio = 1;
  in.topk = 0;
  in.decode_swa_indices = mat(1, 2, {3, -1});
  in.prefill_topk = mat(1, 0, {});
  in.query_start_loc = vec({0, 1, 1, 2});
  in.seq_lens = vec({1, 0, 1});
  in.token_to_req = vec({0, 2});
  in.swa = PagedCache{mat(3, 1, {0, 0, 1}), 16};
  const BuilderOutput out = build_mixed_sparse_indices(in);
  EXPECT_TRUE(same_matrix(mat(2, 2, {3, -1,  //
                                     16, -1}),
                          out.sparse_indices));
  EXPECT_TRUE(same_vector(vec({2, 2}), out.sparse_lens));
}

}  // namespace
}  // namespace dsv4::ref
