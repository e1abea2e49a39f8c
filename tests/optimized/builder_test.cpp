// Every builder backend (the kernels/ row logic on the CPU, the CUDA kernels) against the
// hand-worked outputs and the reference, element for element: indices, lens and content-error
// counts, on seeded random builds (valid structure; random, also corrupted, content) staged in
// random layouts. Every output element must be written: the output memory is poisoned and
// rebuilt in place.
#include <gtest/gtest.h>

#include "harness/generators.h"
#include "harness/hand_cases.h"
#include "support/backend_test.h"
#include "support/expectations.h"

namespace dsv4::testing {
namespace {

using BuilderTest = BackendTest;
DSV4_ON_EVERY_BACKEND(BuilderTest);

// `count` random builds from seed `first_seed` on, each in its own random layout.
void expect_random_builds(opt::MixedSparseIndicesBuilder& builder, uint64_t first_seed, int count,
                          const harness::BuildLimits& limits = {}) {
  for (uint64_t seed = first_seed; seed < first_seed + static_cast<uint64_t>(count); ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(limits), seed);
    const harness::RequestLayout layout = harness::draw(harness::gen_request_layout(), seed);
    ASSERT_TRUE(builds_like_reference(builder, in, layout)) << "seed " << seed << ": " << harness::describe(in);
  }
}

TEST_P(BuilderTest, HandCasesGiveTheWorkedOutputs) {
  EXPECT_EQ(builder().backend(), backend());
  for (const harness::HandCase& c : harness::hand_cases()) {
    EXPECT_TRUE(builds_as(builder(), c.inputs, c.expected)) << c.name;
    EXPECT_TRUE(builds_as(builder(), c.inputs, c.expected, harness::same_layout({3, 1}))) << c.name << ", strided";
  }
}

TEST_P(BuilderTest, RandomBuildsInRandomLayoutsMatchTheReference) { expect_random_builds(builder(), 1000, 800); }

// Rows wider than a CTA's one pass: each of its threads handles several passes.
TEST_P(BuilderTest, WideRowsMatchTheReference) {
  harness::BuildLimits wide;
  wide.max_topk = 3000;
  wide.max_requests = 4;
  wide.max_prefill_query = 40;
  wide.max_context = 20000;
  expect_random_builds(builder(), 4000, 24, wide);
}

// Decode-only steps (on CUDA the decode-chunk kernel, a CTA per row, when their rows fit a
// CTA; the group kernel otherwise), and wide rows past one CTA's 1024 chunks.
TEST_P(BuilderTest, DecodeOnlyBuildsMatchTheReference) {
  harness::BuildLimits decodes;
  decodes.decode_only = true;
  decodes.max_requests = 40;
  decodes.max_topk = 600;
  expect_random_builds(builder(), 8000, 150, decodes);
  harness::BuildLimits wide = decodes;  // rows up to 5128 columns
  wide.max_requests = 4;
  wide.max_topk = 5000;
  expect_random_builds(builder(), 8300, 20, wide);
}

// Prefill-only steps (on CUDA, with power-of-two blocks and 16-byte rows, the prefill-rows
// kernel), and wide rows past 1024 16-byte chunks.
TEST_P(BuilderTest, PrefillOnlyBuildsMatchTheReference) {
  harness::BuildLimits prefills;
  prefills.prefill_only = true;
  prefills.max_requests = 8;
  prefills.max_prefill_query = 30;
  prefills.max_context = 60;  // early positions: rows whose compressed count ends inside a chunk
  prefills.max_topk = 600;
  expect_random_builds(builder(), 9000, 150, prefills);
  harness::BuildLimits wide = prefills;  // rows up to 5128 columns
  wide.max_requests = 3;
  wide.max_prefill_query = 12;
  wide.max_context = 30000;
  wide.max_topk = 5000;
  expect_random_builds(builder(), 9300, 20, wide);
}

// Without corruption a random build has no content error (and still matches).
TEST_P(BuilderTest, ValidContentCountsNoErrors) {
  harness::BuildLimits valid;
  valid.corrupt = false;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(valid), seed);
    ASSERT_EQ(ref::build_mixed_sparse_indices(in).content_errors, 0) << harness::describe(in);
    ASSERT_TRUE(builds_like_reference(builder(), in)) << "seed " << seed;
  }
}

// 8 content errors per build (request 1's SWA block 0 is -1).
TEST_P(BuilderTest, ErrorsAccumulateUntilTakenThenReset) {
  ref::BuilderInputs in = harness::tiny_c4a();
  in.swa.block_table = harness::mat(2, 2, {0, 1, -1, 3});
  harness::StagedRequest staged(backend(), in);
  builder().build(staged.request());
  builder().build(staged.request());
  EXPECT_EQ(builder().take_content_errors(), 16);
  EXPECT_EQ(builder().take_content_errors(), 0);
  builder().release_outputs();
}

TEST_P(BuilderTest, OutputsAreAlignedDistinctAndRecycledPerStep) {
  harness::StagedRequest staged(backend(), harness::tiny_c4a());
  const opt::BuiltIndices a = builder().build(staged.request());
  const opt::BuiltIndices b = builder().build(staged.request());
  EXPECT_NE(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.sparse_indices) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.sparse_lens) % 16, 0u);
  builder().release_outputs();
  EXPECT_EQ(builder().build(staged.request()).sparse_indices, a.sparse_indices);
  EXPECT_EQ(builder().take_content_errors(), 0);  // also: the builds are done before staged is freed
  builder().release_outputs();
  EXPECT_STREQ(opt::backend_name(builder().backend()), backend() == opt::Backend::kHost ? "host" : "cuda");
}

}  // namespace
}  // namespace dsv4::testing
