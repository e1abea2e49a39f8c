// SPEC §2 positions and §6 per-step metadata (decode SWA indices, C128A metadata), by hand.
#include <gtest/gtest.h>

#include "reference/step.h"
#include "harness/hand_cases.h"
#include "support/assertions.h"

namespace dsv4::ref {
namespace {

using harness::mat;
using testing::same_matrix;
using testing::same_vector;
using testing::throws_naming;
using harness::vec;

// A small step with SWA block size 4:
//   request 0: speculative decode, tokens 0, 1, seq_len 6 -> positions 4, 5; SWA row [3, 1, 0]
//   request 1: decode padding token 2, seq_len 3 -> position 2;              SWA row [2, 5, 0]
//   request 2: decode token 3, seq_len 2 -> position 1;                      SWA row [7, 0, 0]
//   request 3: prefill token 4, seq_len 9 -> position 8;                     SWA row [4, 6, 8]
Step small_step() {
  Step step;
  step.query_start_loc = vec({0, 2, 3, 4, 5});
  step.seq_lens = vec({6, 3, 2, 9});
  step.token_to_req = vec({0, 0, 1, 2, 3});
  step.num_decode_tokens = 4;
  step.decode_valid = {1, 1, 0, 1};
  step.swa = PagedCache{mat(4, 3, {3, 1, 0,  //
                                   2, 5, 0,  //
                                   7, 0, 0,  //
                                   4, 6, 8}),
                        4};
  return step;
}

TEST(TokenPosition, SeqLenMinusQueryLengthPlusOffset) {
  const Step step = small_step();
  // pos = seq_len - query length + offset in the request.
  EXPECT_EQ(token_position(step, 0), 6 - 2 + 0);
  EXPECT_EQ(token_position(step, 1), 6 - 2 + 1);
  EXPECT_EQ(token_position(step, 2), 3 - 1 + 0);
  EXPECT_EQ(token_position(step, 3), 2 - 1 + 0);
  EXPECT_EQ(token_position(step, 4), 9 - 1 + 0);
}

TEST(TokenPosition, RejectsTokenOutOfRange) {
  const Step step = small_step();
  EXPECT_TRUE(throws_naming([&] { token_position(step, 5); }, {"t = 5", "T = 5"}));
  EXPECT_TRUE(throws_naming([&] { token_position(step, -1); }, {"t = -1"}));
}

// W = 4; slot = table[r][i / 4] * 4 + i % 4.
//   t0 (pos 4): swa_len 4, start 1: i = 1, 2, 3 -> 3 * 4 + i = 13, 14, 15; i = 4 -> 1 * 4 = 4
//   t1 (pos 5): start 2 -> 14, 15, 4, 5
//   t2: padding -> all -1
//   t3 (pos 1): swa_len 2, start 0 -> 7 * 4 + {0, 1} = 28, 29, then -1 -1
// The prefill token 4 has no row (D x W).
TEST(DecodeSwaIndices, HandStepWithPaddingToken) {
  EXPECT_TRUE(same_matrix(mat(4, 4, {13, 14, 15, 4,    //
                                     14, 15, 4, 5,     //
                                     -1, -1, -1, -1,   //
                                     28, 29, -1, -1}),
                          decode_swa_indices(small_step(), 4)));
}

// Without decode_valid every decode token is valid: t2 (pos 2) gets swa_len 3, start 0 ->
// 2 * 4 + {0, 1, 2} = 8, 9, 10, then -1.
TEST(DecodeSwaIndices, EmptyValidityMeansAllValid) {
  Step step = small_step();
  step.decode_valid.clear();
  const IndexMatrix got = decode_swa_indices(step, 4);
  EXPECT_TRUE(same_matrix(mat(1, 4, {8, 9, 10, -1}), got.middleRows(2, 1)));
}

// W = 2 (smaller than the history): t0 (pos 4) -> i = 3, 4 -> 15, 4; t1 -> i = 4, 5 -> 4, 5.
TEST(DecodeSwaIndices, NarrowWindow) {
  EXPECT_TRUE(same_matrix(mat(4, 2, {15, 4,  //
                                     4, 5,   //
                                     -1, -1, //
                                     28, 29}),
                          decode_swa_indices(small_step(), 2)));
}

// A lookup the table cannot answer is written -1 (documented choice): request 0's block 1 is -1.
TEST(DecodeSwaIndices, InvalidTableEntryWritesMinusOne) {
  Step step = small_step();
  step.swa.block_table(0, 1) = -1;
  const IndexMatrix got = decode_swa_indices(step, 4);
  EXPECT_TRUE(same_matrix(mat(2, 4, {13, 14, 15, -1,  //
                                     14, 15, -1, -1}),
                          got.topRows(2)));
}

TEST(DecodeSwaIndices, RejectsBadWindowAndBadStep) {
  EXPECT_TRUE(throws_naming([] { decode_swa_indices(small_step(), 0); }, {"window = 0"}));
  Step step = small_step();
  step.decode_valid = {1, 1};
  EXPECT_TRUE(throws_naming([&] { decode_swa_indices(step, 4); }, {"decode_valid", "size 2"}));
  step = small_step();
  step.num_decode_tokens = 1;  // splits request 0
  EXPECT_TRUE(throws_naming([&] { decode_swa_indices(step, 4); }, {"num_decode_tokens = 1"}));
  step = small_step();
  step.token_to_req = vec({0, 0, 1, 2, 4});
  EXPECT_TRUE(throws_naming([&] { decode_swa_indices(step, 4); }, {"token_to_req[4] = 4"}));
  step = small_step();
  step.swa.block_table = mat(3, 1, {0, 0, 0});
  EXPECT_TRUE(throws_naming([&] { decode_swa_indices(step, 4); }, {"swa.block_table", "3 rows"}));
}

TEST(C128aEffectiveWidth, Edges) {
  const int32_t ctx = 1 << 20;  // max_compressed = round_up(8192, 128) = 8192
  EXPECT_EQ(c128a_effective_width(-1, ctx), 128);           // T = 0: max(0 / 128, 1) = 1 -> 128
  EXPECT_EQ(c128a_effective_width(126, ctx), 128);          // 127 / 128 = 0 -> 1 -> 128
  EXPECT_EQ(c128a_effective_width(127, ctx), 128);          // 128 / 128 = 1 -> 128
  EXPECT_EQ(c128a_effective_width(128, ctx), 128);          // 129 / 128 = 1 -> 128
  EXPECT_EQ(c128a_effective_width(128 * 128 - 1, ctx), 128);  // 16384 / 128 = 128 -> 128
  EXPECT_EQ(c128a_effective_width(128 * 129 - 1, ctx), 256);  // 129 -> round_up 256
  EXPECT_EQ(c128a_effective_width(ctx - 1, ctx), 8192);       // 8192 -> 8192
  EXPECT_EQ(c128a_effective_width(4 * ctx, ctx), 8192);       // 32768 capped at 8192
  // max_model_len 1000: ceil(1000 / 128) = 8 -> max_compressed 128 caps everything.
  EXPECT_EQ(c128a_effective_width(5000, 1000), 128);
  // max_model_len 128 * 8192 + 1: ceil -> 8193 -> max_compressed 8320; (2^20 + 1) / 128 = 8192.
  EXPECT_EQ(c128a_effective_width(ctx, ctx + 1), 8192);
  EXPECT_EQ(c128a_effective_width(ctx + 127, ctx + 1), 8320);  // 8193 -> 8320, = cap
}

TEST(C128aEffectiveWidth, RejectsNonsense) {
  EXPECT_TRUE(throws_naming([] { c128a_effective_width(5, 0); }, {"max_model_len = 0"}));
  EXPECT_TRUE(throws_naming([] { c128a_effective_width(-2, 1000); }, {"max_pos = -2"}));
}

// C128A step (compressed block size 2), max_model_len 2^20:
//   request 0: decode, seq_len 384 -> pos 383, n = 384 / 128 = 3; table [5, 8]:
//              j = 0, 1 -> 5 * 2 + j = 10, 11; j = 2 -> 8 * 2 + 0 = 16; lens 3
//   request 1: decode padding, seq_len 1000 -> lens 0, row all -1
//   request 2: decode, seq_len 100 -> pos 99, n = 100 / 128 = 0; lens 0, row all -1
//   request 3: prefill, 2 tokens, seq_len 384 -> positions 382, 383 -> n = 2, 3:
//              local rows 0 1 -1 ... and 0 1 2 -1 ...
// max_pos = 999 (the padding token's position counts) -> 1000 / 128 = 7 -> E = 128.
Step c128a_step() {
  Step step;
  step.query_start_loc = vec({0, 1, 2, 3, 5});
  step.seq_lens = vec({384, 1000, 100, 384});
  step.token_to_req = vec({0, 1, 2, 3, 3});
  step.num_decode_tokens = 3;
  step.decode_valid = {1, 0, 1};
  step.swa = PagedCache{IndexMatrix::Zero(4, 16), 64};
  step.c128a = PagedCache{mat(4, 2, {5, 8,  //
                                     1, 2,  //
                                     3, 4,  //
                                     6, 9}),
                          2};
  return step;
}

TEST(C128aMetadata, HandStep) {
  const C128aMetadata meta = c128a_metadata(c128a_step());
  EXPECT_EQ(meta.effective_width, 128);
  IndexMatrix decode_global = IndexMatrix::Constant(3, 128, -1);
  decode_global(0, 0) = 10;
  decode_global(0, 1) = 11;
  decode_global(0, 2) = 16;
  EXPECT_TRUE(same_matrix(decode_global, meta.decode_global));
  EXPECT_TRUE(same_vector(vec({3, 0, 0}), meta.decode_lens));
  IndexMatrix prefill_local = IndexMatrix::Constant(2, 128, -1);
  prefill_local(0, 0) = 0;
  prefill_local(0, 1) = 1;
  prefill_local(1, 0) = 0;
  prefill_local(1, 1) = 1;
  prefill_local(1, 2) = 2;
  EXPECT_TRUE(same_matrix(prefill_local, meta.prefill_local));
}

// Without decode_valid the former padding token (pos 999, n = 1000 / 128 = 7) is a real one:
// j = 0..6 -> table [1, 2]: 1 * 2 + {0, 1} = 2, 3; 2 * 2 + {0, 1} = 4, 5; then blocks 2, 3
// are past the table's width 2 -> -1 (documented choice); lens 7.
TEST(C128aMetadata, GlobalSlotPastTheTableIsMinusOne) {
  Step step = c128a_step();
  step.decode_valid.clear();
  const C128aMetadata meta = c128a_metadata(step);
  IndexMatrix row = IndexMatrix::Constant(1, 128, -1);
  row(0, 0) = 2;
  row(0, 1) = 3;
  row(0, 2) = 4;
  row(0, 3) = 5;
  EXPECT_TRUE(same_matrix(row, meta.decode_global.middleRows(1, 1)));
  EXPECT_EQ(meta.decode_lens(1), 7);
}

// n(t) is capped at E: max_model_len 1000 -> E = 128, but the decode token sits at pos 19199
// (seq_len 128 * 150) -> n = 150 -> 128. Identity table of 64 blocks of 2: slot(j) = j.
TEST(C128aMetadata, CountCappedAtEffectiveWidth) {
  Step step;
  step.query_start_loc = vec({0, 1});
  step.seq_lens = vec({128 * 150});
  step.token_to_req = vec({0});
  step.num_decode_tokens = 1;
  step.swa = PagedCache{IndexMatrix::Zero(1, 1), 64};
  step.c128a = PagedCache{IndexMatrix(1, 64), 2};
  for (int32_t j = 0; j < 64; ++j) step.c128a.block_table(0, j) = j;
  step.max_model_len = 1000;
  const C128aMetadata meta = c128a_metadata(step);
  EXPECT_EQ(meta.effective_width, 128);
  IndexMatrix row(1, 128);
  for (int32_t j = 0; j < 128; ++j) row(0, j) = j;
  EXPECT_TRUE(same_matrix(row, meta.decode_global));
  EXPECT_TRUE(same_vector(vec({128}), meta.decode_lens));
  EXPECT_EQ(meta.prefill_local.rows(), 0);
  EXPECT_EQ(meta.prefill_local.cols(), 128);
}

TEST(C128aMetadata, EmptyStep) {
  Step step;
  step.query_start_loc = vec({0});
  step.c128a = PagedCache{mat(0, 0, {}), 2};
  const C128aMetadata meta = c128a_metadata(step);
  EXPECT_EQ(meta.effective_width, 128);  // max_pos = -1
  EXPECT_EQ(meta.decode_global.rows(), 0);
  EXPECT_EQ(meta.decode_global.cols(), 128);
  EXPECT_EQ(meta.decode_lens.size(), 0);
  EXPECT_EQ(meta.prefill_local.rows(), 0);
  EXPECT_EQ(meta.prefill_local.cols(), 128);
}

TEST(C128aMetadata, RejectsTableWithWrongRowCount) {
  Step step = c128a_step();
  step.c128a.block_table = mat(1, 2, {5, 8});
  EXPECT_TRUE(throws_naming([&] { c128a_metadata(step); }, {"c128a.block_table", "1 rows"}));
}

}  // namespace
}  // namespace dsv4::ref
