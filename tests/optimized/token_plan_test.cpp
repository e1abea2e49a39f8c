// The per-step token plan (kernels/token_plan.h) on every backend: a build asked to write it
// records each prefill row's request and position and nothing else; a build reading it needs
// neither token_to_req's prefill entries nor query_start_loc nor seq_lens (poisoned here) and
// still equals the reference, in every SPEC §8 part and layout; any plan entry is memory-safe
// (an out-of-range request is a -1 row and one content error, as without a plan); the fields
// that carry a plan are validated; the per-step cache's first prefill build writes the plan and
// its later builds read it.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "harness/backend_step.h"
#include "harness/backend_upload.h"
#include "harness/counting_builder.h"
#include "harness/generators.h"
#include "harness/hand_cases.h"
#include "harness/staged_request.h"
#include "harness/step_factory.h"
#include "optimized/backend_buffer.h"
#include "optimized/step_index_cache.h"
#include "optimized/step_indexer.h"
#include "support/assertions.h"
#include "support/backend_test.h"
#include "support/expectations.h"
#include "support/step_shapes.h"

namespace dsv4::testing {
namespace {

using opt::RowPart;
using opt::TokenPlanEntry;

using TokenPlan = BackendTest;
DSV4_ON_EVERY_BACKEND(TokenPlan);

constexpr RowPart kParts[] = {RowPart::kWhole, RowPart::kWindow, RowPart::kCompressed, RowPart::kTail};
constexpr TokenPlanEntry kPoisonedEntry{0x7a7a7a7a, 0x7a7a7a7a};

// Rows [D, T): {token_to_req[t], pos(t)} (SPEC §2); rows outside keep the poison.
std::vector<TokenPlanEntry> expected_plan(const ref::BuilderInputs& in) {
  const auto T = static_cast<int32_t>(in.token_to_req.size());
  const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
  std::vector<TokenPlanEntry> plan(static_cast<size_t>(T) + 1, kPoisonedEntry);
  for (int32_t t = D; t < T; ++t) {
    const int32_t r = in.token_to_req(t);
    const int32_t begin = in.query_start_loc(r), end = in.query_start_loc(r + 1);
    plan[static_cast<size_t>(t)] = TokenPlanEntry{r, in.seq_lens(r) - (end - begin) + (t - begin)};
  }
  return plan;
}

// T + 1 entries of backend memory (one past T: a write there shows), poisoned.
opt::BackendBuffer poisoned_plan(opt::Backend backend, size_t tokens) {
  return opt::BackendBuffer::upload(backend, std::vector<TokenPlanEntry>(tokens + 1, kPoisonedEntry));
}

std::vector<TokenPlanEntry> download_plan(opt::MixedSparseIndicesBuilder& builder, const opt::BackendBuffer& plan) {
  (void)builder.take_content_errors();  // CUDA: the builds on the builder's stream are done
  std::vector<TokenPlanEntry> host(plan.bytes() / sizeof(TokenPlanEntry));
  opt::copy_to_host(builder.backend(), host.data(), plan.data(), plan.bytes());
  return host;
}

::testing::AssertionResult same_plan(const std::vector<TokenPlanEntry>& want, const std::vector<TokenPlanEntry>& got) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << got.size() << " entries, want " << want.size();
  for (size_t t = 0; t < want.size(); ++t) {
    if (want[t].request != got[t].request || want[t].position != got[t].position) {
      return ::testing::AssertionFailure() << "entry " << t << ": {" << got[t].request << ", " << got[t].position
                                           << "}, want {" << want[t].request << ", " << want[t].position << "}";
    }
  }
  return ::testing::AssertionSuccess();
}

// `in` with the metadata a plan replaces broken beyond use: query_start_loc and seq_lens
// wholly, token_to_req on the prefill rows (decode rows still take their request from it).
ref::BuilderInputs without_prefill_metadata(ref::BuilderInputs in) {
  const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
  in.query_start_loc.setConstant(-1000003);
  in.seq_lens.setConstant(INT_MIN);
  for (int32_t t = D; t < in.token_to_req.size(); ++t) in.token_to_req(t) = INT_MAX;
  return in;
}

TEST_P(TokenPlan, AWriterRecordsEachPrefillRowsRequestAndPositionOnly) {
  for (uint64_t seed = 24000; seed < 24200; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), seed);
    const harness::RequestLayout layout = harness::draw(harness::gen_request_layout(), seed);
    harness::StagedRequest staged(backend(), in, layout);
    opt::BackendBuffer plan = poisoned_plan(backend(), in.token_to_req.size());
    opt::BuildRequest writer = staged.request();
    writer.write_token_plan = true;
    writer.output.token_plan = static_cast<TokenPlanEntry*>(plan.data());
    opt::validate_request_shape(writer);
    ASSERT_TRUE(builds_twice_as(builder(), writer, ref::build_mixed_sparse_indices(in),
                                static_cast<int32_t>(in.decode_swa_indices.rows())))
        << "seed " << seed << ": " << harness::describe(in);
    ASSERT_TRUE(same_plan(expected_plan(in), download_plan(builder(), plan))) << "seed " << seed << ": " << harness::describe(in);
  }
  builder().release_outputs();
}

TEST_P(TokenPlan, AWorkspaceBuildHandsOutThePlanItWrote) {
  const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), 24300);
  harness::StagedRequest staged(backend(), in);
  opt::BuildRequest writer = staged.request();
  writer.output = opt::OutputView{};
  writer.write_token_plan = true;
  const opt::BuiltIndices built = builder().build(writer);
  ASSERT_NE(built.token_plan, nullptr);
  std::vector<TokenPlanEntry> got(in.token_to_req.size());
  (void)builder().take_content_errors();
  opt::copy_to_host(backend(), got.data(), built.token_plan, got.size() * sizeof(TokenPlanEntry));
  std::vector<TokenPlanEntry> want = expected_plan(in);
  want.pop_back();
  for (size_t t = 0; t < static_cast<size_t>(in.decode_swa_indices.rows()); ++t) want[t] = got[t];  // not written
  EXPECT_TRUE(same_plan(want, got));
  writer.write_token_plan = false;
  EXPECT_EQ(builder().build(writer).token_plan, nullptr);
  builder().release_outputs();
}

// The plan is read instead of the metadata: with that metadata broken, every part of every
// layout still equals the reference.
void expect_readers_like_reference(opt::MixedSparseIndicesBuilder& builder, uint64_t first_seed, int count,
                                   const harness::BuildLimits& limits = {}) {
  for (uint64_t seed = first_seed; seed < first_seed + static_cast<uint64_t>(count); ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(limits), seed);
    const harness::RequestLayout layout = harness::draw(harness::gen_request_layout(), seed);
    opt::BackendBuffer plan = opt::BackendBuffer::upload(builder.backend(), expected_plan(in));
    harness::StagedRequest broken(builder.backend(), without_prefill_metadata(in), layout);
    for (RowPart part : kParts) {
      opt::BackendBuffer tail_buffer(builder.backend(), 0);
      opt::BuildRequest reader = with_part(broken.request(), part, tail_buffer);
      reader.token_plan = static_cast<const TokenPlanEntry*>(plan.data());
      opt::validate_request_shape(reader);
      ASSERT_TRUE(builds_twice_as(builder, reader, reference_part(in, part),
                                  static_cast<int32_t>(in.decode_swa_indices.rows())))
          << "seed " << seed << " part " << opt::row_part_name(part) << ": " << harness::describe(in) << "; "
          << harness::describe(layout);
    }
  }
}

TEST_P(TokenPlan, ReadersNeedNoPrefillMetadataInAnyPartOrLayout) {
  expect_readers_like_reference(builder(), 25000, 250);
  harness::BuildLimits wide;
  wide.max_topk = 3000;
  wide.max_requests = 3;
  wide.max_prefill_query = 30;
  wide.max_context = 20000;
  expect_readers_like_reference(builder(), 25500, 12, wide);
  builder().release_outputs();
}

// One launch of several builds reads a plan written before it.
TEST_P(TokenPlan, BuildTogetherReadsAPlanWrittenBefore) {
  for (uint64_t seed = 26000; seed < 26060; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), seed);
    harness::StagedRequest segment_staged(backend(), ref::window_segment_inputs(in));
    harness::StagedRequest staged(backend(), in);
    opt::BackendBuffer plan = opt::BackendBuffer::upload(backend(), expected_plan(in));
    harness::StagedRequest broken_segment(backend(), without_prefill_metadata(ref::window_segment_inputs(in)));
    harness::StagedRequest broken(backend(), without_prefill_metadata(in));
    opt::BuildRequest requests[2] = {broken_segment.request(), broken.request()};
    requests[0].part = RowPart::kWindow;
    for (opt::BuildRequest& r : requests) r.token_plan = static_cast<const TokenPlanEntry*>(plan.data());
    builder().release_outputs();
    (void)builder().take_content_errors();
    opt::BuiltIndices built[2];
    builder().build_together(requests, 2, built);
    const ref::BuilderOutput want[2] = {reference_part(ref::window_segment_inputs(in), RowPart::kWhole),
                                        ref::build_mixed_sparse_indices(in)};
    EXPECT_EQ(builder().take_content_errors(), want[0].content_errors + want[1].content_errors) << "seed " << seed;
    for (int i = 0; i < 2; ++i) {
      harness::HostIndices got = harness::download(backend(), built[i]);
      if (i == 0) got.sparse_lens = want[0].sparse_lens;  // a window build writes no lengths
      harness::Mismatch where;
      where.backend = opt::backend_name(backend());
      where.window = in.window;
      ASSERT_TRUE(no_mismatch(harness::compare_build(want[i], got, want[i].content_errors,
                                                     static_cast<int32_t>(in.decode_swa_indices.rows()), where)))
          << "seed " << seed << " build " << i << ": " << harness::describe(in);
    }
  }
  builder().release_outputs();
}

// Entries no writer makes: requests out of range give a -1 row with length 0 and one content
// error (as token_to_req out of range does); positions at the int32 limits and anywhere in
// range read nothing outside the inputs (the sanitizer runs show it on CUDA).
TEST_P(TokenPlan, AnyEntryIsMemorySafe) {
  const ref::BuilderInputs in = harness::tiny_c4a();
  harness::StagedRequest staged(backend(), in);
  const auto T = static_cast<int32_t>(in.token_to_req.size());
  const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
  const auto R = static_cast<int32_t>(in.seq_lens.size());
  ASSERT_GE(T - D, 2) << "the hand case needs two prefill rows";
  const int32_t requests[] = {-1, R, INT_MAX, INT_MIN};
  const int32_t positions[] = {INT_MIN, -1, 0, 5, 1 << 20, INT_MAX - 1, INT_MAX};
  for (int32_t bad_request : requests) {
    for (int32_t position : positions) {
      std::vector<TokenPlanEntry> entries = expected_plan(in);
      entries[static_cast<size_t>(D)] = TokenPlanEntry{bad_request, position};  // out of range
      entries[static_cast<size_t>(D + 1)].position = position;                // in range, any position
      opt::BackendBuffer plan = opt::BackendBuffer::upload(backend(), entries);
      opt::BuildRequest reader = staged.request();
      reader.token_plan = static_cast<const TokenPlanEntry*>(plan.data());
      builder().release_outputs();
      (void)builder().take_content_errors();
      const opt::BuiltIndices built = builder().build(reader);
      const int64_t errors = builder().take_content_errors();
      const harness::HostIndices got = harness::download(backend(), built);
      EXPECT_GE(errors, 1) << "request " << bad_request << " position " << position;
      EXPECT_EQ(got.sparse_lens(D), 0);
      EXPECT_TRUE((got.sparse_indices.row(D).array() == -1).all()) << "request " << bad_request;
    }
  }
  builder().release_outputs();
}

TEST(TokenPlanValidation, NamesTheFieldThatCannotCarryAPlan) {
  const ref::BuilderInputs in = harness::tiny_c4a();
  harness::StagedRequest staged(opt::Backend::kHost, in);
  alignas(8) TokenPlanEntry plan[64] = {};
  const auto error = [](const opt::BuildRequest& r) { return opt::request_shape_error(r); };
  opt::BuildRequest r = staged.request();
  r.token_plan = plan;
  r.write_token_plan = true;
  r.output.token_plan = plan + 32;
  EXPECT_EQ(error(r), "");

  opt::BuildRequest sized = r;
  const opt::StepSizes sizes{};
  sized.run_time_sizes = &sizes;
  EXPECT_NE(error(sized).find("token_plan is given with run_time_sizes"), std::string::npos) << error(sized);
  sized.token_plan = nullptr;
  EXPECT_NE(error(sized).find("write_token_plan is given with run_time_sizes"), std::string::npos) << error(sized);

  opt::BuildRequest odd = r;
  odd.token_plan = reinterpret_cast<const TokenPlanEntry*>(reinterpret_cast<const char*>(plan) + 4);
  EXPECT_EQ(error(odd), "token_plan is not 8-byte aligned");
  odd = r;
  odd.output.token_plan = reinterpret_cast<TokenPlanEntry*>(reinterpret_cast<char*>(plan + 32) + 4);
  EXPECT_EQ(error(odd), "output.token_plan is not 8-byte aligned");

  opt::BuildRequest unasked = r;
  unasked.write_token_plan = false;
  EXPECT_EQ(error(unasked), "output.token_plan is given without write_token_plan");

  opt::BuildRequest nowhere = r;
  std::vector<int32_t> lens(64);
  nowhere.output.sparse_indices = nullptr;
  nowhere.output.token_plan = nullptr;
  EXPECT_EQ(error(nowhere), "");  // the workspace holds it
  alignas(16) static int32_t caller_indices[64 * 1024];
  nowhere.output.sparse_indices = caller_indices;
  nowhere.output.row_stride = (opt::output_width(nowhere) + 3) / 4 * 4;
  nowhere.output.sparse_lens = lens.data();
  EXPECT_EQ(error(nowhere), "write_token_plan with caller-owned outputs needs output.token_plan (it is null)");

  opt::BuildRequest itself = r;
  itself.output.token_plan = plan;
  EXPECT_EQ(error(itself),
            "token_plan and output.token_plan are the same memory (a build would read the plan it writes)");
}

TEST_P(TokenPlan, BuildTogetherRefusesToReadAPlanItWrites) {
  harness::StagedRequest staged(backend(), harness::tiny_c4a());
  opt::BackendBuffer plan = poisoned_plan(backend(), static_cast<size_t>(staged.request().num_tokens));
  opt::BuildRequest requests[2] = {staged.request(), staged.request()};
  requests[0].write_token_plan = true;
  requests[0].output.token_plan = static_cast<TokenPlanEntry*>(plan.data());
  requests[1].token_plan = static_cast<const TokenPlanEntry*>(plan.data());
  opt::BuiltIndices built[2];
  try {
    builder().build_together(requests, 2, built);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("request 1's token_plan is what request 0 writes"), std::string::npos) << e.what();
  }
  builder().release_outputs();
}

// A step through the per-layer entry point: the first build writes the plan into the workspace,
// every build of a later launch reads it (the builds launched with the writer run with it, so
// they read nothing); decode-only steps and share_token_plan = false use none; the next step
// writes its own.
TEST_P(TokenPlan, AStepsFirstBuildWritesThePlanItsLaterBuildsRead) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  for (opt::SharingMode mode : {opt::SharingMode::kSeed, opt::SharingMode::kSplit, opt::SharingMode::kTailOnly}) {
    for (bool share : {true, false}) {
      for (bool decode_only : {false, true}) {
        harness::StepShape shape = small_mixed_shape(31);
        if (decode_only) shape.num_prefills = 0;
        const ref::Step step = harness::make_step(shape);
        const harness::BackendStep staged(backend(), step, schedule,
                                          harness::make_c4a_indexer_outputs(step, schedule, 32));
        harness::CountingBuilder counting(builder());
        opt::CacheOptions options;
        options.share_token_plan = share;
        for (int s = 0; s < 2; ++s) {
          const int64_t builds_before = counting.build_calls();
          const int64_t writes_before = counting.token_plan_writes();
          const int64_t reads_before = counting.token_plan_reads();
          opt::StepIndexer indexer(counting, staged.inputs(), options, mode);
          if (mode != opt::SharingMode::kSeed) indexer.build_cacheable_together(schedule.compress_ratios, staged.c4a(2));
          // The first launch's builds: the writer and the builds launched with it.
          const int64_t first_launch = mode == opt::SharingMode::kSeed ? 1 : counting.build_calls() - builds_before;
          for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
            const int32_t ratio = schedule.compress_ratios[static_cast<size_t>(layer)];
            switch (mode) {
              case opt::SharingMode::kSeed: (void)indexer.layer_indices(ratio, staged.c4a(layer)); break;
              case opt::SharingMode::kSplit: (void)indexer.layer_split_indices(ratio, staged.c4a(layer)); break;
              case opt::SharingMode::kTailOnly: (void)indexer.layer_tail_indices(ratio, staged.c4a(layer)); break;
            }
          }
          EXPECT_EQ(indexer.content_errors(), 0);
          indexer.end_step();
          const std::string where = std::string(opt::sharing_mode_name(mode)) + (share ? " shared" : " unshared") +
                                    (decode_only ? " decode-only" : " mixed") + " step " + std::to_string(s);
          const int64_t builds = counting.build_calls() - builds_before;
          const int64_t writes = counting.token_plan_writes() - writes_before;
          const int64_t reads = counting.token_plan_reads() - reads_before;
          if (!share || decode_only) {
            EXPECT_EQ(writes, 0) << where;
            EXPECT_EQ(reads, 0) << where;
            continue;
          }
          EXPECT_EQ(builds, harness::expected_builder_calls(schedule, true) + (mode == opt::SharingMode::kSeed ? 0 : 1))
              << where;
          EXPECT_EQ(writes, 1) << where;
          EXPECT_EQ(reads, builds - first_launch) << where;  // tail builds too: they read, not write
          EXPECT_NE(counting.last_token_plan_read(), nullptr) << where;
        }
      }
    }
  }
}

// The step's plan is read only by builds over the metadata that wrote it: a build whose
// query_start_loc, seq_lens or token_to_req is another array (here a copy of the same values)
// neither reads it nor writes another.
TEST_P(TokenPlan, OnlyBuildsOfTheWritersMetadataReadIt) {
  const ref::BuilderInputs in = harness::tiny_c4a();  // D = 1, T = 3: two prefill rows
  const harness::StagedRequest staged(backend(), in);
  harness::BackendUploads copies(backend());
  const int32_t* const qsl = copies.ints(in.query_start_loc.data(), in.query_start_loc.size());
  const int32_t* const seq_lens = copies.ints(in.seq_lens.data(), in.seq_lens.size());
  const int32_t* const t2r = copies.ints(in.token_to_req.data(), in.token_to_req.size());
  harness::CountingBuilder counting(builder());
  opt::StepIndexCache cache(counting);
  (void)cache.get_or_build(opt::LayerKind::kC4A, staged.request());  // writes the plan
  (void)cache.get_or_build(opt::LayerKind::kC4A, staged.request());  // reads it
  ASSERT_EQ(counting.token_plan_writes(), 1);
  ASSERT_EQ(counting.token_plan_reads(), 1);
  for (int field = 0; field < 3; ++field) {
    opt::BuildRequest other = staged.request();
    if (field == 0) other.query_start_loc = qsl;
    if (field == 1) other.seq_lens = seq_lens;
    if (field == 2) other.token_to_req = t2r;
    const opt::BuiltIndices built = cache.get_or_build(opt::LayerKind::kC4A, other);
    EXPECT_EQ(counting.token_plan_reads(), 1) << "field " << field;
    EXPECT_EQ(counting.token_plan_writes(), 1) << "field " << field;
    (void)cache.take_content_errors();  // CUDA: the build is done
    EXPECT_TRUE(same_matrix(ref::build_mixed_sparse_indices(in).sparse_indices,
                            harness::download(backend(), built).sparse_indices))
        << "field " << field;
  }
}

}  // namespace
}  // namespace dsv4::testing
