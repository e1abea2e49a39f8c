// SPEC §4 structural errors: each one mutates a valid tiny batch in exactly one way and expects
// std::invalid_argument whose message names the field (and row and value where it has them),
// from both validate_builder_inputs and build_mixed_sparse_indices, with nothing written.
#include <gtest/gtest.h>

#include <climits>
#include <functional>

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

// One broken field of a tiny batch (C4A unless `base` says otherwise): rejected naming every
// needle.
struct Broken {
  std::function<void(BuilderInputs&)> mutate;
  std::vector<std::string> needles;
  BuilderInputs (*base)() = harness::tiny_c4a;
};
void expect_rejected(const std::vector<Broken>& cases) {
  for (const Broken& b : cases) {
    BuilderInputs in = b.base();
    b.mutate(in);
    EXPECT_TRUE(rejected(in, b.needles)) << b.needles.front();
  }
}
using In = BuilderInputs;

TEST(BuilderValidation, ScalarsBelowTheirMinimum) {
  expect_rejected({{[](In& in) { in.window = -3; }, {"window = -3"}},
                   {[](In& in) { in.window = 0; }, {"window = 0"}},
                   {[](In& in) { in.ratio = 0; }, {"ratio = 0"}},  // the builder never divides by it
                   {[](In& in) { in.topk = -7; }, {"topk = -7"}},
                   {[](In& in) { in.swa.block_size = -5; }, {"swa.block_size = -5"}},
                   {[](In& in) { in.swa.block_size = 0; }, {"swa.block_size = 0"}},
                   {[](In& in) { in.compressed->block_size = 0; }, {"compressed.block_size = 0"}},
                   {[](In& in) { in.topk = INT_MAX; }, {"topk = 2147483647"}}});  // W + P past int32
}

TEST(BuilderValidation, TensorShapes) {
  expect_rejected({
      {[](In& in) { in.decode_swa_indices = mat(1, 7, {5, 6, -1, -1, -1, -1, -1}); },
       {"decode_swa_indices", "7 columns", "window = 4"}},
      {[](In& in) { in.decode_compressed = mat(2, 2, {2, -1, 3, -1}); }, {"decode_compressed", "2 rows", "D = 1"}},
      {[](In& in) { in.decode_compressed_lens = vec({2, 2}); }, {"decode_compressed_lens", "size 2", "D = 1"},
       harness::tiny_c128a},
      {[](In& in) { in.decode_valid = std::vector<uint8_t>{1, 1}; }, {"decode_valid", "size 2", "D = 1"}},
      {[](In& in) { in.prefill_topk = mat(1, 2, {0, 1}); }, {"prefill_topk", "1 rows", "T - D = 2"}},
      // SWA-only still needs (T - D) x 0.
      {[](In& in) { in.prefill_topk = mat(0, 0, {}); }, {"prefill_topk", "0 rows", "T - D = 2"}, harness::tiny_swa_only},
      {[](In& in) { in.swa.block_table = mat(1, 2, {0, 1}); }, {"swa.block_table", "1 rows", "R = 2"}},
      {[](In& in) { in.compressed->block_table = mat(1, 2, {0, 1}); }, {"compressed.block_table", "1 rows", "R = 2"}},
      {[](In& in) { in.query_start_loc = vec({0, 3}); }, {"query_start_loc", "size 2", "R + 1 = 3"}}});
  BuilderInputs in = harness::tiny_c4a();  // zero columns means absent: any row count is fine then
  in.decode_compressed = mat(5, 0, {});
  EXPECT_NO_THROW(validate_builder_inputs(in));
  in = harness::tiny_c4a();  // more rows than R: a persistent table (SPEC §7), rows >= R unread
  in.compressed->block_table = mat(3, 2, {0, 1, 2, 3, 4, 5});
  EXPECT_NO_THROW(validate_builder_inputs(in));
}

TEST(BuilderValidation, DecodeForms) {
  expect_rejected({{[](In& in) { in.decode_compressed_lens = vec({3}); }, {"decode_compressed_lens[0] = 3", "Kd = 2"},
                    harness::tiny_c128a},
                   {[](In& in) { in.decode_compressed_lens = vec({-1}); }, {"decode_compressed_lens[0] = -1"},
                    harness::tiny_c128a},
                   // Lens belong to the global form, validity to the local form.
                   {[](In& in) { in.decode_compressed_lens = vec({1}); }, {"decode_compressed_lens", "decode_local = true"}},
                   {[](In& in) { in.decode_valid = std::vector<uint8_t>{1}; }, {"decode_valid", "decode_local = false"},
                    harness::tiny_c128a}});
}

TEST(BuilderValidation, StepStructure) {
  expect_rejected({
      {[](In& in) { in.query_start_loc = vec({1, 1, 3}); }, {"query_start_loc[0] = 1"}},
      {[](In& in) { in.query_start_loc = vec({0, 4, 3}); }, {"query_start_loc[2] = 3", "query_start_loc[1] = 4"}},
      {[](In& in) { in.query_start_loc = vec({0, 1, 2}); }, {"query_start_loc[2] = 2", "T = 3"}},
      {[](In& in) { in.token_to_req = vec({0, 1, 2}); }, {"token_to_req[2] = 2", "R = 2"}},
      {[](In& in) { in.token_to_req = vec({0, -1, 1}); }, {"token_to_req[1] = -1"}},
      // Token 1 lies in request 1's range [1, 3), token 0 in request 0's [0, 1).
      {[](In& in) { in.token_to_req = vec({0, 0, 1}); }, {"token_to_req[1] = 0", "query_start_loc"}},
      {[](In& in) { in.token_to_req = vec({1, 1, 1}); }, {"token_to_req[0] = 1", "query_start_loc"}},
      {[](In& in) { in.seq_lens = vec({2, 1}); }, {"seq_lens[1] = 1", "query length 2"}},
      // Request 1's SWA row has 2 blocks of 64: 128 tokens; the capacity is computed in 64 bits.
      {[](In& in) { in.seq_lens = vec({2, 129}); }, {"seq_lens[1] = 129", "128"}},
      {[](In& in) { in.seq_lens = vec({2, INT_MAX}); }, {"seq_lens[1] = 2147483647"}}});
  BuilderInputs in = harness::tiny_c4a();
  in.seq_lens = vec({2, 128});
  EXPECT_NO_THROW(validate_builder_inputs(in));
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
