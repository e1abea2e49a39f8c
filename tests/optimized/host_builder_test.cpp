// The host backend (the kernels/ row logic on the CPU) against hand-worked outputs and the
// reference, element for element: indices, lens and content-error counts.
#include <gtest/gtest.h>

#include <climits>

#include "optimized/host_builder.h"
#include "tests/optimized/optimized_test_support.h"

namespace dsv4::opt {
namespace {

using testing::mat;
using testing::vec;

// Builds `in` once and compares with literal expectations (worked out from SPEC §3 by hand).
void expect_build(const ref::BuilderInputs& in, const ref::IndexMatrix& indices,
                  const ref::IndexVector& lens, int64_t errors) {
  auto builder = make_host_builder();
  testing::StagedRequest staged(Backend::kHost, in);
  validate_step_structure(staged.request(), staged.host());
  const BuiltIndices built = builder->build(staged.request());
  ref::BuilderOutput expected;
  expected.sparse_indices = indices;
  expected.sparse_lens = lens;
  expected.content_errors = errors;
  EXPECT_TRUE(testing::same_output(expected, harness::download(Backend::kHost, built),
                                   builder->take_content_errors(),
                                   static_cast<int32_t>(in.decode_swa_indices.rows())));
  // And the oracle agrees (poisoned output, rebuilt in place).
  EXPECT_TRUE(testing::build_matches_reference(*builder, in));
}

// t0 (decode): SWA row copied. t1, t2 (pos 8, 9): windows 5..8 and 6..9 in request 1's block 0
// (physical 2): 2 * 64 + i. SWA-only: P = 0, lens W = 4.
TEST(HostBuilder, TinyBatchSwaOnly) {
  expect_build(testing::tiny_swa_only(),
               mat(3, 4, {5, 6, -1, -1, 133, 134, 135, 136, 134, 135, 136, 137}), vec({4, 4, 4}), 0);
}

// C128A: P = 4. t0: global [9, 10] copied, len 4 + 2. t1, t2: (p + 1) / 128 = 0 -> no picks.
TEST(HostBuilder, TinyBatchC128A) {
  expect_build(testing::tiny_c128a(),
               mat(3, 8, {5, 6, -1, -1, 9, 10, -1, -1,           //
                          133, 134, 135, 136, -1, -1, -1, -1,    //
                          134, 135, 136, 137, -1, -1, -1, -1}),
               vec({6, 4, 4}), 0);
}

// C4A: block size 2. t0 (request 0): local 2 -> table[0][1] * 2 + 0 = 2; one pick -> len 5.
// t1 (pos 8): topk_len min(9 / 4, 2) = 2: 0 -> 2 * 2 = 4, 1 -> 5. t2: 1 -> 5, 2 -> 3 * 2 = 6.
TEST(HostBuilder, TinyBatchC4A) {
  expect_build(testing::tiny_c4a(),
               mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,         //
                          133, 134, 135, 136, 4, 5, -1, -1,    //
                          134, 135, 136, 137, 5, 6, -1, -1}),
               vec({5, 6, 6}), 0);
}

// No compressed cache: lookups go through the SWA table with block size 64.
TEST(HostBuilder, CompressedLookupFallsBackToSwaCache) {
  ref::BuilderInputs in = testing::tiny_c4a();
  in.compressed.reset();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,             //
                          133, 134, 135, 136, 128, 129, -1, -1,    //
                          134, 135, 136, 137, 129, 130, -1, -1}),
               vec({5, 6, 6}), 0);
}

// W = 3 (scalar path), topk 5 -> P = 8: width 11. One prefill token at pos 23.
// SWA block size 8, table [3, 0, 7]: start 21 -> block 2: 56 + {5, 6, 7}.
// topk_len = min(24 / 4, 5) = 5; compressed block size 4, table [5, 1]:
// 0 -> 20, 4 -> 4, 5 -> 5, 7 -> 7, 3 -> 23; 6th pick cut; rest -1.
TEST(HostBuilder, ScalarPathOddWindow) {
  const ref::BuilderInputs in = testing::odd_window_prefill();
  expect_build(in, mat(1, 11, {61, 62, 63, 20, 4, 5, 7, 23, -1, -1, -1}), vec({8}), 0);
}

// Local decode with a padding token (translated anyway, len W) and a negative local index
// below -1 (no entry, no error).
TEST(HostBuilder, LocalDecodePaddingAndNegativeIndex) {
  const ref::BuilderInputs in = testing::local_decode_with_padding();
  // t0: 0 -> 8, 3 -> 11 (2 picks, len 4); t1: -5 -> -1, 1 -> 9 (1 pick, len 3);
  // t2 (padding): 5 -> 1 * 4 + 1 = 5, 0 -> 28, len 2.
  expect_build(in, mat(3, 6, {4, 5, 8, 11, -1, -1, 5, 6, -1, 9, -1, -1, -1, -1, 5, 28, -1, -1}),
               vec({4, 3, 2}), 0);
}

// Global decode without lens: compressed length Kd for every token.
TEST(HostBuilder, GlobalDecodeWithoutLens) {
  const ref::BuilderInputs in = testing::global_decode_without_lens();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, 123456, -3, 7, -1,       //
                          133, 134, 135, 136, -1, -1, -1, -1,    //
                          134, 135, 136, 137, -1, -1, -1, -1}),
               vec({7, 4, 4}), 0);
}

TEST(HostBuilder, EveryHandCaseMatchesTheReference) {
  auto builder = make_host_builder();
  for (const testing::NamedCase& c : testing::hand_cases()) {
    EXPECT_TRUE(testing::build_matches_reference(*builder, c.inputs)) << c.name;
  }
}

TEST(HostBuilder, EmptyStep) {
  ref::BuilderInputs in;
  in.window = 4;
  in.ratio = 4;
  in.topk = 5;
  in.decode_swa_indices = ref::IndexMatrix(0, 4);
  in.prefill_topk = ref::IndexMatrix(0, 5);
  in.query_start_loc = vec({0});
  in.token_to_req = ref::IndexVector(0);
  in.seq_lens = ref::IndexVector(0);
  in.swa = ref::PagedCache{ref::IndexMatrix(0, 0), 64};
  auto builder = make_host_builder();
  testing::StagedRequest staged(Backend::kHost, in);
  validate_step_structure(staged.request(), staged.host());
  const BuiltIndices built = builder->build(staged.request());
  EXPECT_EQ(built.num_tokens, 0);
  EXPECT_EQ(built.width, 12);
  EXPECT_EQ(builder->take_content_errors(), 0);
}

// ---- SPEC §4 content errors: -1 and counted, exactly as the reference ----

// t2's local 4: block 2 >= NBc = 2.
TEST(HostBuilderContentErrors, PrefillCompressedBlockPastTableWidth) {
  const ref::BuilderInputs in = testing::prefill_block_past_table_width();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,         //
                          133, 134, 135, 136, 4, 5, -1, -1,    //
                          134, 135, 136, 137, 5, -1, -1, -1}),
               vec({5, 6, 6}), 1);
}

TEST(HostBuilderContentErrors, CompressedNegativeTableEntry) {
  const ref::BuilderInputs in = testing::compressed_negative_table_entry();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,         //
                          133, 134, 135, 136, 4, 5, -1, -1,    //
                          134, 135, 136, 137, 5, -1, -1, -1}),
               vec({5, 6, 6}), 1);
}

// Still a pick (v >= 0): len stays W + 1.
TEST(HostBuilderContentErrors, DecodeLocalBlockPastTableWidth) {
  const ref::BuilderInputs in = testing::decode_local_block_past_table_width();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, -1, -1, -1, -1,        //
                          133, 134, 135, 136, 4, 5, -1, -1,    //
                          134, 135, 136, 137, 5, 6, -1, -1}),
               vec({5, 6, 6}), 1);
}

// Request 1's SWA block 0 is -1: all 8 window lookups of t1, t2 fail.
TEST(HostBuilderContentErrors, PrefillSwaNegativeTableEntry) {
  const ref::BuilderInputs in = testing::prefill_swa_negative_table_entry();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,     //
                          -1, -1, -1, -1, 4, 5, -1, -1,    //
                          -1, -1, -1, -1, 5, 6, -1, -1}),
               vec({5, 6, 6}), 8);
}

// 2^30 * block size 2 = 2^31 does not fit int32: 3 lookups of request 1's block 0.
TEST(HostBuilderContentErrors, SlotBeyondInt32) {
  const ref::BuilderInputs in = testing::slot_beyond_int32();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, 2, -1, -1, -1,          //
                          133, 134, 135, 136, -1, -1, -1, -1,   //
                          134, 135, 136, 137, -1, 6, -1, -1}),
               vec({5, 6, 6}), 3);
}

// Global slots are never looked up; picks past topk_len are never read.
TEST(HostBuilderContentErrors, GlobalSlotsAndPicksPastTopkLenAreNotErrors) {
  const ref::BuilderInputs in = testing::global_slots_and_late_picks_unread();
  expect_build(in,
               mat(3, 8, {5, 6, -1, -1, 123456, -3, -1, -1,     //
                          133, 134, 135, 136, -1, -1, -1, -1,   //
                          134, 135, 136, 137, -1, -1, -1, -1}),
               vec({6, 4, 4}), 0);
}

// ---- Seeded random builds (valid structure, random and corrupted content) ----

void random_builds(uint64_t seed_base, int cases, testing::StagingOptions options) {
  auto builder = make_host_builder();
  for (int i = 0; i < cases; ++i) {
    std::mt19937_64 rng(seed_base + static_cast<uint64_t>(i));
    const ref::BuilderInputs in = testing::random_builder_inputs(rng);
    const auto same = testing::build_matches_reference(*builder, in, options);
    ASSERT_TRUE(same) << "seed " << seed_base + static_cast<uint64_t>(i) << ": "
                      << testing::describe(in);
  }
}

TEST(HostBuilderRandom, DenseAlignedInputs) { random_builds(1000, 400, {}); }
TEST(HostBuilderRandom, PaddedRowStrides) { random_builds(2000, 200, {1, 0}); }
TEST(HostBuilderRandom, MisalignedInputs) { random_builds(3000, 200, {3, 1}); }

// Without corruption a random build has no content error (and still matches).
TEST(HostBuilderRandom, ValidContentCountsNoErrors) {
  auto builder = make_host_builder();
  testing::RandomShape shape;
  shape.corrupt = false;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::mt19937_64 rng(seed);
    const ref::BuilderInputs in = testing::random_builder_inputs(rng, shape);
    ASSERT_EQ(ref::build_mixed_sparse_indices(in).content_errors, 0) << testing::describe(in);
    ASSERT_TRUE(testing::build_matches_reference(*builder, in)) << "seed " << seed;
  }
}

TEST(HostBuilder, ErrorsAccumulateUntilTakenThenReset) {
  auto builder = make_host_builder();
  ref::BuilderInputs in = testing::tiny_c4a();
  in.swa.block_table = mat(2, 2, {0, 1, -1, 3});  // 8 errors per build
  testing::StagedRequest staged(Backend::kHost, in);
  builder->build(staged.request());
  builder->build(staged.request());
  EXPECT_EQ(builder->take_content_errors(), 16);
  EXPECT_EQ(builder->take_content_errors(), 0);
}

TEST(HostBuilder, OutputsAreDistinctWithinAStepAndRecycledAfterIt) {
  auto builder = make_host_builder();
  testing::StagedRequest staged(Backend::kHost, testing::tiny_c4a());
  const BuiltIndices a = builder->build(staged.request());
  const BuiltIndices b = builder->build(staged.request());
  EXPECT_NE(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.sparse_indices) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.sparse_lens) % 16, 0u);
  builder->release_outputs();
  const BuiltIndices c = builder->build(staged.request());
  EXPECT_EQ(c.sparse_indices, a.sparse_indices);
  EXPECT_EQ(builder->backend(), Backend::kHost);
  EXPECT_STREQ(backend_name(builder->backend()), "host");
}

}  // namespace
}  // namespace dsv4::opt
