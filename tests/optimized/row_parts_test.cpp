// SPEC §8's row parts on every backend: a build of one part (the window, the split form's
// compressed segment, a tail-only C4A build) writes exactly its columns of the reference's
// SPEC §3 rows, nothing else, and counts only its columns' content errors; a window build and
// a tail build into its buffer make the whole output; build_together equals the builds one by
// one. Random builds (valid structure, also corrupted content) in random layouts; the output
// memory is poisoned and rebuilt in place, so an element written that should not be shows.
#include <gtest/gtest.h>

#include "harness/generators.h"
#include "harness/hand_cases.h"
#include "optimized/backend_buffer.h"
#include "support/backend_test.h"
#include "support/expectations.h"

namespace dsv4::testing {
namespace {

using opt::RowPart;

using RowParts = BackendTest;
DSV4_ON_EVERY_BACKEND(RowParts);

constexpr RowPart kParts[] = {RowPart::kWhole, RowPart::kWindow, RowPart::kCompressed, RowPart::kTail};

void expect_parts_like_reference(opt::MixedSparseIndicesBuilder& builder, uint64_t first_seed, int count,
                                 const harness::BuildLimits& limits = {}) {
  for (uint64_t seed = first_seed; seed < first_seed + static_cast<uint64_t>(count); ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(limits), seed);
    const harness::RequestLayout layout = harness::draw(harness::gen_request_layout(), seed);
    harness::StagedRequest staged(builder.backend(), in, layout);
    opt::validate_step_structure(staged.request(), staged.host());
    for (RowPart part : kParts) {
      opt::BackendBuffer tail_buffer(builder.backend(), 0);
      const opt::BuildRequest request = with_part(staged.request(), part, tail_buffer);
      opt::validate_request_shape(request);
      ASSERT_TRUE(builds_twice_as(builder, request, reference_part(in, part),
                                  static_cast<int32_t>(in.decode_swa_indices.rows())))
          << "seed " << seed << " part " << opt::row_part_name(part) << ": " << harness::describe(in) << "; "
          << harness::describe(layout);
    }
  }
}

TEST_P(RowParts, EachPartWritesItsColumnsOfTheReferenceRowsOnly) { expect_parts_like_reference(builder(), 20000, 300); }

TEST_P(RowParts, WideAndDecodeOnlyRows) {
  harness::BuildLimits wide;
  wide.max_topk = 3000;
  wide.max_requests = 3;
  wide.max_prefill_query = 30;
  wide.max_context = 20000;
  expect_parts_like_reference(builder(), 21000, 12, wide);
  harness::BuildLimits decodes;
  decodes.decode_only = true;
  decodes.max_requests = 40;
  decodes.max_topk = 600;
  expect_parts_like_reference(builder(), 21100, 80, decodes);
}

// The tail-only sequence: the window columns once, then a tail build into that buffer, equal
// to the whole build, with the window's and the tail's content errors adding up to its own.
TEST_P(RowParts, AWindowBuildAndATailBuildIntoItsBufferMakeTheWholeOutput) {
  for (uint64_t seed = 22000; seed < 22150; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), seed);
    harness::StagedRequest staged(backend(), in, harness::draw(harness::gen_request_layout(), seed));
    const ref::BuilderOutput want = ref::build_mixed_sparse_indices(in);
    builder().release_outputs();
    (void)builder().take_content_errors();
    opt::BuildRequest window = staged.request();
    window.part = RowPart::kWindow;
    window.output = opt::OutputView{};  // the workspace makes the buffer
    const opt::BuiltIndices buffer = builder().build(window);
    opt::BuildRequest tail = staged.request();
    tail.part = RowPart::kTail;
    tail.output = opt::OutputView{buffer.sparse_indices, buffer.row_stride, buffer.sparse_lens};
    opt::validate_request_shape(tail);
    const opt::BuiltIndices built = builder().build(tail);
    ASSERT_EQ(built.sparse_indices, buffer.sparse_indices);
    const int64_t errors = builder().take_content_errors();
    harness::Mismatch where;
    where.backend = opt::backend_name(backend());
    where.window = in.window;
    ASSERT_TRUE(no_mismatch(harness::compare_build(want, harness::download(backend(), built), errors,
                                                   static_cast<int32_t>(in.decode_swa_indices.rows()), where)))
        << "seed " << seed << ": " << harness::describe(in);
  }
  builder().release_outputs();
}

// build_together (one launch on CUDA where the builds share its compiled form) gives what the
// builds one by one give: the SWA segment, a compressed segment and a whole build of one step.
TEST_P(RowParts, BuildTogetherEqualsTheBuildsOneByOne) {
  for (uint64_t seed = 23000; seed < 23200; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), seed);
    const harness::RequestLayout layout = seed % 2 == 0 ? harness::RequestLayout{} : harness::draw(harness::gen_request_layout(), seed);
    harness::StagedRequest staged(backend(), in, layout);
    harness::StagedRequest segment(backend(), ref::window_segment_inputs(in), layout);
    opt::BuildRequest requests[3] = {segment.request(), staged.request(), staged.request()};
    requests[0].part = RowPart::kWindow;
    requests[1].part = RowPart::kCompressed;
    for (opt::BuildRequest& r : requests) r.output = opt::OutputView{};  // each its own workspace output
    const ref::BuilderOutput want[3] = {reference_part(ref::window_segment_inputs(in), RowPart::kWhole),
                                        reference_part(in, RowPart::kCompressed), reference_part(in, RowPart::kWhole)};
    builder().release_outputs();
    (void)builder().take_content_errors();
    opt::BuiltIndices built[3];
    builder().build_together(requests, 3, built);
    const int64_t errors = builder().take_content_errors();
    EXPECT_EQ(errors, want[0].content_errors + want[1].content_errors + want[2].content_errors) << "seed " << seed;
    for (int i = 0; i < 3; ++i) {
      harness::Mismatch where;
      where.backend = opt::backend_name(backend());
      where.path = "build_together " + std::to_string(i);
      where.window = in.window;
      harness::HostIndices got = harness::download(backend(), built[i]);
      if (i == 0) got.sparse_lens = want[0].sparse_lens;  // a window build writes no lengths
      ASSERT_TRUE(no_mismatch(harness::compare_build(want[i], got, want[i].content_errors,
                                                     static_cast<int32_t>(in.decode_swa_indices.rows()), where)))
          << "seed " << seed << ": " << harness::describe(in);
    }
  }
  builder().release_outputs();
}

TEST_P(RowParts, BuildTogetherTakesAtMostItsLimit) {
  harness::StagedRequest staged(backend(), harness::tiny_c4a());
  opt::BuildRequest requests[opt::kMaxBuildsTogether + 1];
  for (opt::BuildRequest& r : requests) r = staged.request();
  opt::BuiltIndices built[opt::kMaxBuildsTogether + 1];
  EXPECT_THROW(builder().build_together(requests, opt::kMaxBuildsTogether + 1, built), std::invalid_argument);
  builder().build_together(requests, opt::kMaxBuildsTogether, built);
  for (int i = 1; i < opt::kMaxBuildsTogether; ++i) EXPECT_NE(built[i].sparse_indices, built[0].sparse_indices);
  builder().release_outputs();
}

}  // namespace
}  // namespace dsv4::testing
