// SPEC §7 on every backend: the hand-worked engine cases (span and offset, persistent tables,
// capacities) in dense, strided and caller-owned layouts; random builds made persistent
// (capacities full of garbage, sentinel request ids) with run-time sizes, valid and with
// broken metadata, against the reference's checked build: output, content errors and the
// status word.
#include <gtest/gtest.h>

#include <random>

#include "harness/engine_hand_cases.h"
#include "harness/generators.h"
#include "harness/persistent_buffers.h"
#include "support/backend_test.h"
#include "support/expectations.h"

namespace dsv4::testing {
namespace {

using EngineIntegrationTest = BackendTest;
DSV4_ON_EVERY_BACKEND(EngineIntegrationTest);

harness::RequestLayout persistent_layout(int32_t table_padding, bool caller_output, int32_t output_padding) {
  harness::RequestLayout layout;
  layout.table_row_padding = table_padding;
  layout.caller_output = caller_output;
  layout.output_row_padding = output_padding;
  return layout;
}

TEST_P(EngineIntegrationTest, HandCasesGiveTheWorkedOutputs) {
  for (const harness::HandCase& c : harness::engine_hand_cases()) {
    EXPECT_TRUE(builds_as(builder(), c.inputs, c.expected)) << c.name;
    EXPECT_TRUE(builds_as(builder(), c.inputs, c.expected, persistent_layout(5, false, 0))) << c.name << ", strided tables";
    EXPECT_TRUE(builds_as(builder(), c.inputs, c.expected, persistent_layout(0, true, 0))) << c.name << ", caller output";
    harness::RequestLayout all = persistent_layout(3, true, 8);
    all.prefill_topk = all.decode_compressed = all.decode_swa_indices = harness::MatrixLayout{4, 0};
    EXPECT_TRUE(builds_as(builder(), c.inputs, c.expected, all)) << c.name << ", every view strided";
  }
}

// Random builds (also with content errors: offsets past 2^31 and below 0) with spans, offsets,
// persistent tables, capacities and caller-owned outputs in random layouts.
TEST_P(EngineIntegrationTest, RandomEngineLayoutsMatchTheReference) {
  std::mt19937_64 rng(10);
  for (uint64_t seed = 100; seed < 400; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_engine_builder_inputs(), seed);
    harness::RequestLayout layout = harness::draw(harness::gen_request_layout(), seed);
    layout.table_row_padding = static_cast<int32_t>(rng() % 3);
    layout.caller_output = rng() % 2 == 0;
    layout.output_row_padding = 4 * static_cast<int32_t>(rng() % 2);
    ASSERT_TRUE(builds_like_reference(builder(), in, layout))
        << "seed " << seed << ": " << harness::describe(in) << "; " << harness::describe(layout);
  }
}

TEST_P(EngineIntegrationTest, RunTimeSizesOfValidStepsMatchTheReference) {
  std::mt19937_64 rng(11);
  for (uint64_t seed = 500; seed < 700; ++seed) {
    const harness::PersistentBuildCase c = harness::draw(harness::gen_persistent_build(), seed);
    const harness::RequestLayout layout = persistent_layout(static_cast<int32_t>(rng() % 2), rng() % 2 == 0, 4);
    const ref::CheckedBuild want = ref::build_mixed_sparse_indices(c.build.inputs, c.build.sizes);
    ASSERT_EQ(want.status.check, ref::MetadataCheck::kNone) << "seed " << seed << ": " << ref::describe(want.status);
    ASSERT_TRUE(checked_build_like_reference(builder(), c.build.inputs, c.build.sizes, layout))
        << "seed " << seed << ": " << harness::describe(c.build.inputs);
  }
}

// Broken metadata under run-time sizes: rows it breaks are -1 with length 0, the status word
// names the first failure like the reference's, and nothing else changes.
TEST_P(EngineIntegrationTest, RunTimeSizesWithBrokenMetadataMatchTheReference) {
  std::mt19937_64 rng(12);
  int reported = 0;
  for (uint64_t seed = 800; seed < 1100; ++seed) {
    const harness::PersistentBuildCase c = harness::draw(harness::gen_persistent_build({}, true), seed);
    reported += ref::check_metadata(c.build.inputs, c.build.sizes).check != ref::MetadataCheck::kNone;
    ASSERT_TRUE(checked_build_like_reference(builder(), c.build.inputs, c.build.sizes,
                                             persistent_layout(1, rng() % 2 == 0, 0)))
        << "seed " << seed << ": " << c.corruption << "; " << harness::describe(c.build.inputs);
  }
  EXPECT_GT(reported, 150);  // most corruptions are structural errors
}

// SPEC §7 x §8: every row part of a build with run-time sizes (a split or tail-only step
// graph's builds), valid and broken metadata: the part's columns of the reference's checked
// rows (padding and broken rows -1, length 0 in every form), its columns' content errors,
// and the status word.
TEST_P(EngineIntegrationTest, RunTimeSizesInEveryRowPartMatchTheReference) {
  std::mt19937_64 rng(14);
  int broken = 0;
  for (uint64_t seed = 1100; seed < 1250; ++seed) {
    const bool corrupt = seed % 2 == 1;
    const harness::PersistentBuildCase c = harness::draw(harness::gen_persistent_build({}, corrupt), seed);
    broken += ref::check_metadata(c.build.inputs, c.build.sizes).check != ref::MetadataCheck::kNone;
    const harness::RequestLayout layout = persistent_layout(static_cast<int32_t>(rng() % 2), rng() % 2 == 0, 4);
    for (const opt::RowPart part : {opt::RowPart::kWindow, opt::RowPart::kCompressed, opt::RowPart::kTail}) {
      ASSERT_TRUE(checked_build_like_reference(builder(), c.build.inputs, c.build.sizes, layout, part))
          << "seed " << seed << " part " << opt::row_part_name(part) << ": " << c.corruption << "; "
          << harness::describe(c.build.inputs);
    }
  }
  EXPECT_GT(broken, 40);
}

// Decode steps over decode-only capacities (a decode graph: no prefill row fits), valid and
// broken, whole and in every SPEC §8 row part: on CUDA the decode-chunk kernel builds them and
// checks the metadata in one launch.
TEST_P(EngineIntegrationTest, DecodeOnlyCapacitiesMatchTheReference) {
  std::mt19937_64 rng(13);
  harness::BuildLimits valid;
  valid.corrupt = false;
  int decode_steps = 0, reported = 0;
  for (uint64_t seed = 1200; seed < 4200 && decode_steps < 150; ++seed) {
    const ref::BuilderInputs step = harness::draw(harness::gen_builder_inputs(valid), seed);
    if (step.token_to_req.size() != step.decode_swa_indices.rows() || step.token_to_req.size() == 0) continue;
    ++decode_steps;
    harness::PersistentBuild b = harness::with_capacity(step, harness::ExtraCapacity{2, 2, 0, 1}, rng);
    std::string what = "valid";
    if (decode_steps % 2 == 0) what = harness::corrupt_metadata(b, rng);
    reported += ref::check_metadata(b.inputs, b.sizes).check != ref::MetadataCheck::kNone;
    const harness::RequestLayout layout = persistent_layout(0, rng() % 2 == 0, 0);
    for (const opt::RowPart part : {opt::RowPart::kWhole, opt::RowPart::kWindow, opt::RowPart::kCompressed, opt::RowPart::kTail}) {
      ASSERT_TRUE(checked_build_like_reference(builder(), b.inputs, b.sizes, layout, part))
          << "seed " << seed << " part " << opt::row_part_name(part) << ": " << what << "; " << harness::describe(step);
    }
  }
  EXPECT_GE(decode_steps, 150);
  EXPECT_GT(reported, 40);
}

}  // namespace
}  // namespace dsv4::testing
