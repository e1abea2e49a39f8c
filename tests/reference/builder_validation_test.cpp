// SPEC §4 structural errors: each one mutates a valid tiny batch in exactly one way and expects
// std::invalid_argument whose message names the field (and row and value where it has them),
// from both validate_builder_inputs and build_mixed_sparse_indices, with nothing written.
#include <gtest/gtest.h>

#include <climits>

#include "reference/mixed_sparse_indices.h"
#include "harness/hand_cases.h"
#include "support/assertions.h"

namespace dsv4::ref {
namespace {

using harness::mat;
using testing::throws_naming;
using harness::vec;

// Both entry points reject `in`, naming every needle; the output slot is left untouched.
::testing::AssertionResult rejected(const BuilderInputs& in, const std::vector<std::string>& needles) {
  const auto validated = throws_naming([&] { validate_builder_inputs(in); }, needles);
  if (!validated) return validated;
  BuilderOutput out;
  out.content_errors = -7;  // a sentinel the builder would overwrite
  const auto built = throws_naming([&] { out = build_mixed_sparse_indices(in); }, needles);
  if (!built) return built;
  if (out.content_errors != -7 || out.sparse_indices.size() != 0 || out.sparse_lens.size() != 0) {
    return ::testing::AssertionFailure() << "output was written before the throw";
  }
  return built;
}

TEST(BuilderValidation, TinyBatchesAreValid) {
  EXPECT_NO_THROW(validate_builder_inputs(harness::tiny_swa_only()));
  EXPECT_NO_THROW(validate_builder_inputs(harness::tiny_c128a()));
  EXPECT_NO_THROW(validate_builder_inputs(harness::tiny_c4a()));
}

TEST(BuilderValidation, ScalarsBelowTheirMinimum) {
  BuilderInputs in = harness::tiny_c4a();
  in.window = -3;
  EXPECT_TRUE(rejected(in, {"window = -3"}));
  in = harness::tiny_c4a();
  in.window = 0;
  EXPECT_TRUE(rejected(in, {"window = 0"}));
  in = harness::tiny_c4a();
  in.ratio = 0;  // the builder never divides by a ratio below 1 (SPEC §6)
  EXPECT_TRUE(rejected(in, {"ratio = 0"}));
  in = harness::tiny_c4a();
  in.topk = -7;
  EXPECT_TRUE(rejected(in, {"topk = -7"}));
  in = harness::tiny_c4a();
  in.swa.block_size = -5;
  EXPECT_TRUE(rejected(in, {"swa.block_size = -5"}));
  in = harness::tiny_c4a();
  in.swa.block_size = 0;
  EXPECT_TRUE(rejected(in, {"swa.block_size = 0"}));
  in = harness::tiny_c4a();
  in.compressed->block_size = 0;
  EXPECT_TRUE(rejected(in, {"compressed.block_size = 0"}));
}

TEST(BuilderValidation, OutputWidthMustFitInt32) {
  BuilderInputs in = harness::tiny_c4a();
  in.topk = INT_MAX;  // W + round_up(topk, 4) > INT32_MAX
  EXPECT_TRUE(rejected(in, {"topk = 2147483647"}));
}

TEST(BuilderValidation, DecodeSwaIndicesMustHaveWindowColumns) {
  BuilderInputs in = harness::tiny_c4a();
  in.decode_swa_indices = mat(1, 7, {5, 6, -1, -1, -1, -1, -1});
  EXPECT_TRUE(rejected(in, {"decode_swa_indices", "7 columns", "window = 4"}));
}

TEST(BuilderValidation, DecodeCompressedMustHaveDRows) {
  BuilderInputs in = harness::tiny_c4a();
  in.decode_compressed = mat(2, 2, {2, -1, 3, -1});
  EXPECT_TRUE(rejected(in, {"decode_compressed", "2 rows", "D = 1"}));
  // Zero columns means absent: any row count is fine then.
  in.decode_compressed = mat(5, 0, {});
  EXPECT_NO_THROW(validate_builder_inputs(in));
}

TEST(BuilderValidation, DecodeCompressedLensMustHaveSizeD) {
  BuilderInputs in = harness::tiny_c128a();
  in.decode_compressed_lens = vec({2, 2});
  EXPECT_TRUE(rejected(in, {"decode_compressed_lens", "size 2", "D = 1"}));
}

TEST(BuilderValidation, DecodeCompressedLensMustLieWithinDecodeWidth) {
  BuilderInputs in = harness::tiny_c128a();
  in.decode_compressed_lens = vec({3});  // Kd = 2
  EXPECT_TRUE(rejected(in, {"decode_compressed_lens[0] = 3", "Kd = 2"}));
  in.decode_compressed_lens = vec({-1});
  EXPECT_TRUE(rejected(in, {"decode_compressed_lens[0] = -1"}));
}

TEST(BuilderValidation, DecodeValidMustHaveSizeD) {
  BuilderInputs in = harness::tiny_c4a();
  in.decode_valid = std::vector<uint8_t>{1, 1};
  EXPECT_TRUE(rejected(in, {"decode_valid", "size 2", "D = 1"}));
}

TEST(BuilderValidation, LensOnlyWithGlobalFormAndValidityOnlyWithLocalForm) {
  BuilderInputs in = harness::tiny_c4a();
  in.decode_compressed_lens = vec({1});
  EXPECT_TRUE(rejected(in, {"decode_compressed_lens", "decode_local = true"}));
  in = harness::tiny_c128a();
  in.decode_valid = std::vector<uint8_t>{1};
  EXPECT_TRUE(rejected(in, {"decode_valid", "decode_local = false"}));
}

TEST(BuilderValidation, PrefillTopkMustHaveTMinusDRows) {
  BuilderInputs in = harness::tiny_c4a();
  in.prefill_topk = mat(1, 2, {0, 1});
  EXPECT_TRUE(rejected(in, {"prefill_topk", "1 rows", "T - D = 2"}));
  in = harness::tiny_swa_only();
  in.prefill_topk = mat(0, 0, {});  // SWA-only still needs (T - D) x 0
  EXPECT_TRUE(rejected(in, {"prefill_topk", "0 rows", "T - D = 2"}));
}

// More rows than R are a persistent table (SPEC §7: only rows < R are read); fewer are an error.
TEST(BuilderValidation, BlockTablesMustHaveARowPerRequest) {
  BuilderInputs in = harness::tiny_c4a();
  in.swa.block_table = mat(1, 2, {0, 1});
  EXPECT_TRUE(rejected(in, {"swa.block_table", "1 rows", "R = 2"}));
  in = harness::tiny_c4a();
  in.compressed->block_table = mat(1, 2, {0, 1});
  EXPECT_TRUE(rejected(in, {"compressed.block_table", "1 rows", "R = 2"}));
  in = harness::tiny_c4a();
  in.compressed->block_table = mat(3, 2, {0, 1, 2, 3, 4, 5});
  EXPECT_NO_THROW(validate_builder_inputs(in));
}

TEST(BuilderValidation, QueryStartLocMustHaveSizeRPlusOne) {
  BuilderInputs in = harness::tiny_c4a();
  in.query_start_loc = vec({0, 3});
  EXPECT_TRUE(rejected(in, {"query_start_loc", "size 2", "R + 1 = 3"}));
}

TEST(BuilderValidation, QueryStartLocMustStartAtZero) {
  BuilderInputs in = harness::tiny_c4a();
  in.query_start_loc = vec({1, 1, 3});
  EXPECT_TRUE(rejected(in, {"query_start_loc[0] = 1"}));
}

TEST(BuilderValidation, QueryStartLocMustNotDecrease) {
  BuilderInputs in = harness::tiny_c4a();
  in.query_start_loc = vec({0, 4, 3});
  EXPECT_TRUE(rejected(in, {"query_start_loc[2] = 3", "query_start_loc[1] = 4"}));
}

TEST(BuilderValidation, QueryStartLocMustEndAtT) {
  BuilderInputs in = harness::tiny_c4a();
  in.query_start_loc = vec({0, 1, 2});
  EXPECT_TRUE(rejected(in, {"query_start_loc[2] = 2", "T = 3"}));
}

TEST(BuilderValidation, TokenToReqOutOfRange) {
  BuilderInputs in = harness::tiny_c4a();
  in.token_to_req = vec({0, 1, 2});
  EXPECT_TRUE(rejected(in, {"token_to_req[2] = 2", "R = 2"}));
  in.token_to_req = vec({0, -1, 1});
  EXPECT_TRUE(rejected(in, {"token_to_req[1] = -1"}));
}

TEST(BuilderValidation, TokenToReqMustAgreeWithQueryStartLoc) {
  BuilderInputs in = harness::tiny_c4a();
  in.token_to_req = vec({0, 0, 1});  // token 1 lies in request 1's range [1, 3)
  EXPECT_TRUE(rejected(in, {"token_to_req[1] = 0", "query_start_loc"}));
  in.token_to_req = vec({1, 1, 1});  // token 0 lies in request 0's range [0, 1)
  EXPECT_TRUE(rejected(in, {"token_to_req[0] = 1", "query_start_loc"}));
}

TEST(BuilderValidation, SeqLenBelowQueryLength) {
  BuilderInputs in = harness::tiny_c4a();
  in.seq_lens = vec({2, 1});  // request 1 has 2 tokens this step
  EXPECT_TRUE(rejected(in, {"seq_lens[1] = 1", "query length 2"}));
}

TEST(BuilderValidation, SeqLenAboveSwaBlockTableCapacity) {
  // Request 1's SWA row has 2 blocks of 64 -> holds 128 tokens.
  BuilderInputs in = harness::tiny_c4a();
  in.seq_lens = vec({2, 128});
  EXPECT_NO_THROW(validate_builder_inputs(in));
  in.seq_lens = vec({2, 129});
  EXPECT_TRUE(rejected(in, {"seq_lens[1] = 129", "128"}));
  in.seq_lens = vec({2, INT_MAX});  // capacity is computed in 64 bits
  EXPECT_TRUE(rejected(in, {"seq_lens[1] = 2147483647"}));
}

TEST(BuilderValidation, DecodeTokensMustEndAtARequestBoundary) {
  // D = 2 splits request 1 (tokens 1, 2): not a boundary of query_start_loc [0, 1, 3].
  BuilderInputs in = harness::tiny_swa_only();
  in.decode_swa_indices = mat(2, 4, {5, 6, -1, -1, 7, -1, -1, -1});
  in.prefill_topk = mat(1, 0, {});
  EXPECT_TRUE(rejected(in, {"decode_swa_indices", "D = 2", "query_start_loc"}));
}

TEST(BuilderValidation, DecodeTokensCannotExceedT) {
  BuilderInputs in = harness::tiny_swa_only();
  in.decode_swa_indices = IndexMatrix::Constant(5, 4, -1);
  in.prefill_topk = mat(0, 0, {});
  EXPECT_TRUE(rejected(in, {"decode_swa_indices", "D = 5", "T = 3"}));
}

TEST(BuilderValidation, ErrorsInAnEmptyStepAreStillCaught) {
  BuilderInputs in;
  in.window = 4;
  in.decode_swa_indices = mat(0, 4, {});
  in.prefill_topk = mat(0, 0, {});
  in.query_start_loc = vec({});  // must be [0] for R = 0
  in.seq_lens = vec({});
  in.token_to_req = vec({});
  in.swa = PagedCache{mat(0, 0, {}), 64};
  EXPECT_TRUE(rejected(in, {"query_start_loc", "size 0", "R + 1 = 1"}));
}

}  // namespace
}  // namespace dsv4::ref
