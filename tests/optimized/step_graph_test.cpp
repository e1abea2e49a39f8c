// SPEC §7 CUDA graphs: a whole step's builds (Flash 23, Pro 31) recorded once over persistent
// buffers and replayed for successive random decode steps (new positions, tables, R and T under
// the capacities, sentinel ids in padded rows), every layer's output, the status words and the
// content errors equal to the reference's checked builds on every replay. The host backend
// replays the recorded requests (CI); the CUDA backend replays one CUDA graph (H200).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "harness/counting_builder.h"
#include "harness/graph_step.h"
#include "harness/persistent_buffers.h"
#include "harness/step_factory.h"
#include "support/backend_test.h"

namespace dsv4::testing {
namespace {

using StepGraphTest = BackendTest;
DSV4_ON_EVERY_BACKEND(StepGraphTest);

::testing::AssertionResult replays_like_reference(opt::StepGraph& graph, harness::GraphStepBuffers& buffers,
                                                  const ref::ModelSchedule& schedule, int replays, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int replay = 0; replay < replays; ++replay) {
    buffers.draw_decode_step(rng);
    buffers.upload();
    const std::vector<harness::Mismatch> mismatches = harness::replay_and_compare(graph, buffers, schedule);
    if (!mismatches.empty()) {
      const ref::RunTimeSizes& s = buffers.host().sizes;
      return ::testing::AssertionFailure() << schedule.name << " replay " << replay << " (T " << s.num_tokens << ", R "
                                           << s.num_requests << "): " << harness::format_mismatch(mismatches.front())
                                           << " (" << mismatches.size() << " mismatches)";
    }
  }
  return ::testing::AssertionSuccess();
}

// A small schedule's capacities on the host (CI), the real ones on the device.
harness::GraphCapacities capacities_for(opt::Backend backend) {
  harness::GraphCapacities c;
  if (backend == opt::Backend::kHost) {
    c.tokens = 12;
    c.requests = 10;
    c.table_rows = 13;
    c.max_context = 2000;
  }
  return c;
}

int replays_for(opt::Backend backend) { return backend == opt::Backend::kHost ? 40 : 200; }

TEST_P(StepGraphTest, RecordsOneBuildPerCacheKeyAndPerC4aLayer) {
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    harness::CountingBuilder counting(builder());
    harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
    opt::StepGraph graph(counting, buffers.spec());
    EXPECT_EQ(graph.builds(), harness::expected_builder_calls(schedule, true)) << schedule.name;
    EXPECT_EQ(counting.build_calls(), harness::expected_builder_calls(schedule, true)) << schedule.name;
    // Cached layers share one output (identity, SPEC §5); every address is the caller's.
    for (int32_t layer = 0; layer < graph.num_layers(); ++layer) {
      const auto kind = opt::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(layer)]);
      if (kind == opt::LayerKind::kC128A) {
        EXPECT_EQ(graph.layer_indices(layer).sparse_indices, buffers.spec().outputs.c128a.sparse_indices);
      }
      if (kind == opt::LayerKind::kSwaOnly) {
        EXPECT_EQ(graph.layer_indices(layer).sparse_indices, buffers.spec().outputs.swa_only.sparse_indices);
      }
    }
    graph.replay();
    (void)graph.content_errors();
    EXPECT_EQ(counting.build_calls(), harness::expected_builder_calls(schedule, true)) << "a replay calls no build";
  }
}

TEST_P(StepGraphTest, FlashReplaysOfRandomDecodeStepsMatchTheReference) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  opt::StepGraph graph(builder(), buffers.spec());
  EXPECT_TRUE(replays_like_reference(graph, buffers, schedule, replays_for(backend()), 1));
}

TEST_P(StepGraphTest, ProReplaysOfRandomDecodeStepsMatchTheReference) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_pro();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  opt::StepGraph graph(builder(), buffers.spec());
  EXPECT_TRUE(replays_like_reference(graph, buffers, schedule, replays_for(backend()), 2));
}

// Writes `broken`'s run-time sizes and step metadata into `buffers` and uploads them.
void upload_metadata(harness::GraphStepBuffers& buffers, const harness::PersistentBuild& broken) {
  harness::PersistentStepHost& host = buffers.host();
  host.sizes = broken.sizes;
  host.query_start_loc = broken.inputs.query_start_loc;
  host.seq_lens = broken.inputs.seq_lens;
  host.token_to_req = broken.inputs.token_to_req;
  buffers.upload();
}

// Draws a decode step into `buffers`, breaks its metadata (harness::corrupt_metadata), uploads
// it and returns what was broken.
std::string upload_broken_decode_step(harness::GraphStepBuffers& buffers, std::mt19937_64& rng) {
  buffers.draw_decode_step(rng);
  harness::PersistentBuild broken{buffers.reference_inputs(0), buffers.host().sizes};
  const std::string what = harness::corrupt_metadata(broken, rng);
  upload_metadata(buffers, broken);
  return what;
}

// Broken metadata written between replays: every build writes -1 / 0 for the rows it breaks,
// the status word of each kind names the first failure like the reference's checks, and the
// next valid step replays cleanly. (On the H200: compute-sanitizer memcheck over this test.)
TEST_P(StepGraphTest, ReplaysWithCorruptedMetadataReportTheFirstError) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  opt::StepGraph graph(builder(), buffers.spec());
  std::mt19937_64 rng(3);
  int reported = 0;
  const int replays = backend() == opt::Backend::kHost ? 20 : 100;
  for (int replay = 0; replay < replays; ++replay) {
    const std::string what = upload_broken_decode_step(buffers, rng);
    reported += ref::check_metadata(buffers.reference_inputs(0), buffers.host().sizes).check != ref::MetadataCheck::kNone;
    const std::vector<harness::Mismatch> mismatches = harness::replay_and_compare(graph, buffers, schedule);
    ASSERT_TRUE(mismatches.empty()) << "replay " << replay << ", " << what << ": "
                                    << harness::format_mismatch(mismatches.front());
  }
  EXPECT_GT(reported, replays / 2);
  EXPECT_TRUE(replays_like_reference(graph, buffers, schedule, 3, 4)) << "a valid step after broken ones";
}

// A decode graph (D_cap = T_cap) has no prefill capacity in any kind: a replayed step with a
// prefill row is refused by the SWA-only build as by the others (its build then takes the
// decode kernel, with the status check in the same launch).
TEST_P(StepGraphTest, ADecodeGraphRefusesPrefillRowsInEveryKind) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  opt::StepGraph graph(builder(), buffers.spec());
  std::mt19937_64 rng(5);
  do {
    buffers.draw_decode_step(rng);
  } while (buffers.host().sizes.num_tokens < 2);
  buffers.host().sizes.num_decode_tokens -= 1;  // the last token is now a prefill row
  buffers.upload();
  const std::vector<harness::Mismatch> mismatches = harness::replay_and_compare(graph, buffers, schedule);
  EXPECT_TRUE(mismatches.empty()) << harness::format_mismatch(mismatches.front());
  for (const opt::LayerKind kind : {opt::LayerKind::kSwaOnly, opt::LayerKind::kC4A, opt::LayerKind::kC128A}) {
    const opt::MetadataStatus status = buffers.status(kind);
    EXPECT_EQ(status.check, static_cast<int32_t>(opt::MetadataCheck::kPrefillRows)) << opt::layer_kind_name(kind);
    EXPECT_EQ(status.value, 1) << opt::layer_kind_name(kind);
  }
}

TEST_P(StepGraphTest, RejectsASpecItCannotRecord) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  opt::StepGraphSpec spec = buffers.spec();
  spec.outputs.c4a.pop_back();
  EXPECT_THROW(opt::StepGraph(builder(), spec), std::invalid_argument);
  spec = buffers.spec();
  spec.run_time_sizes = nullptr;
  EXPECT_THROW(opt::StepGraph(builder(), spec), std::invalid_argument);
  spec = buffers.spec();
  spec.outputs.c128a.sparse_indices = nullptr;
  EXPECT_THROW(opt::StepGraph(builder(), spec), std::invalid_argument);
  spec = buffers.spec();
  spec.outputs.c128a.row_stride = 4;  // below W + P_cap
  EXPECT_THROW(opt::StepGraph(builder(), spec), std::invalid_argument);
  // Nothing was left recording: a good spec records after the bad ones.
  opt::StepGraph graph(builder(), buffers.spec());
  EXPECT_EQ(graph.builds(), 23);
}

// The builds of a replay run in chains at once (and the host replays them in reverse): outputs
// that overlap are refused, naming both, whatever the number of chains.
TEST_P(StepGraphTest, RejectsOutputsThatOverlap) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  for (const int32_t chains : {1, 4}) {
    opt::StepGraphSpec spec = buffers.spec();
    spec.chains = chains;
    spec.outputs.c4a[3] = spec.outputs.c4a[1];
    EXPECT_THAT([&] { opt::StepGraph(builder(), spec); },
                ::testing::ThrowsMessage<std::invalid_argument>(
                    ::testing::HasSubstr("outputs.c4a[1].sparse_indices and outputs.c4a[3].sparse_indices overlap")));
    spec = buffers.spec();
    spec.chains = chains;
    spec.outputs.c128a.sparse_lens = spec.outputs.swa_only.sparse_lens + 1;
    EXPECT_THAT([&] { opt::StepGraph(builder(), spec); },
                ::testing::ThrowsMessage<std::invalid_argument>(
                    ::testing::HasSubstr("outputs.swa_only.sparse_lens and outputs.c128a.sparse_lens overlap")));
  }
}

// Every number of chains records the same builds and replays to the same outputs: 1 (layer
// order, what an engine's graph that interleaves the builds with its layers runs), a few, one
// per build, more than builds. Fewer than 1 is refused.
TEST_P(StepGraphTest, EveryNumberOfChainsReplaysLikeTheReference) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_pro();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  for (const int32_t chains : {1, 3, 31, 1000}) {
    opt::StepGraphSpec spec = buffers.spec();
    spec.chains = chains;
    opt::StepGraph graph(builder(), spec);
    EXPECT_EQ(graph.builds(), harness::expected_builder_calls(schedule, true)) << chains << " chains";
    EXPECT_TRUE(replays_like_reference(graph, buffers, schedule, 5, 6 + static_cast<uint64_t>(chains)))
        << chains << " chains";
  }
  opt::StepGraphSpec spec = buffers.spec();
  spec.chains = 0;
  EXPECT_THAT([&] { opt::StepGraph(builder(), spec); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("chains must be >= 1, got 0")));
}

// SPEC §8 split form as a graph: the SWA segment once (one build more than the seed's), each
// layer's compressed segment in its caller-owned output, one segment shared by every layer;
// the seed mode's call refused, and tail-only, which has no graph form.
TEST_P(StepGraphTest, ASplitGraphRecordsTheSwaSegmentOnceAndEveryCompressedSegment) {
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    harness::CountingBuilder counting(builder());
    harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()), opt::SharingMode::kSplit);
    const opt::StepGraphSpec& spec = buffers.spec();
    opt::StepGraph graph(counting, spec);
    EXPECT_EQ(graph.mode(), opt::SharingMode::kSplit);
    EXPECT_EQ(graph.builds(), harness::expected_builder_calls(schedule, true) + 1) << schedule.name;
    EXPECT_EQ(counting.build_calls(), graph.builds()) << schedule.name;
    size_t c4a = 0;
    for (int32_t layer = 0; layer < graph.num_layers(); ++layer) {
      const opt::SplitIndices& got = graph.layer_split_indices(layer);
      EXPECT_EQ(got.swa.sparse_indices, spec.outputs.swa_segment.sparse_indices) << layer;
      EXPECT_EQ(got.swa.sparse_lens, nullptr) << layer;
      EXPECT_EQ(got.swa.width, schedule.window) << layer;
      const auto kind = opt::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(layer)]);
      const opt::OutputView& want = kind == opt::LayerKind::kSwaOnly ? spec.outputs.swa_only
                                    : kind == opt::LayerKind::kC128A ? spec.outputs.c128a
                                                                     : spec.outputs.c4a.at(c4a++);
      EXPECT_EQ(got.compressed.sparse_indices, want.sparse_indices) << layer;
      EXPECT_EQ(got.compressed.sparse_lens, want.sparse_lens) << layer;
    }
    EXPECT_THROW((void)graph.layer_indices(0), std::logic_error);
    EXPECT_THROW((void)graph.layer_split_indices(graph.num_layers()), std::out_of_range);
  }
  const ref::ModelSchedule flash = ref::deepseek_v4_flash();
  harness::GraphStepBuffers seed(backend(), flash, capacities_for(backend()));
  opt::StepGraph seed_graph(builder(), seed.spec());
  EXPECT_THROW((void)seed_graph.layer_split_indices(0), std::logic_error);
  opt::StepGraphSpec tail = seed.spec();
  tail.mode = opt::SharingMode::kTailOnly;
  EXPECT_THAT([&] { opt::StepGraph(builder(), tail); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("mode = tail has no graph form")));
  harness::GraphStepBuffers split(backend(), flash, capacities_for(backend()), opt::SharingMode::kSplit);
  opt::StepGraphSpec no_segment = split.spec();
  no_segment.outputs.swa_segment = opt::OutputView{};
  EXPECT_THAT([&] { opt::StepGraph(builder(), no_segment); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("outputs.swa_segment")));
  opt::StepGraphSpec overlapping = split.spec();
  overlapping.outputs.swa_segment.sparse_indices = overlapping.outputs.c4a[0].sparse_indices;
  EXPECT_THAT([&] { opt::StepGraph(builder(), overlapping); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("overlap")));
}

// Replays of random decode steps in split form (valid, then with broken metadata), in one chain
// and in the default four (few: the sanitizers run this test with the others): both segments of every layer, the status words and the content
// errors like the reference's checked builds cut at column W.
TEST_P(StepGraphTest, SplitGraphsReplayRandomDecodeStepsLikeTheReference) {
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()), opt::SharingMode::kSplit);
    for (const int32_t chains : {1, 4}) {
      opt::StepGraphSpec spec = buffers.spec();
      spec.chains = chains;
      opt::StepGraph graph(builder(), spec);
      EXPECT_TRUE(replays_like_reference(graph, buffers, schedule, 10,
                                         40 + static_cast<uint64_t>(chains)))
          << chains << " chains";
      std::mt19937_64 rng(50 + static_cast<uint64_t>(chains));
      for (int replay = 0; replay < 5; ++replay) {
        const std::string what = upload_broken_decode_step(buffers, rng);
        const std::vector<harness::Mismatch> mismatches = harness::replay_and_compare(graph, buffers, schedule);
        ASSERT_TRUE(mismatches.empty()) << schedule.name << " replay " << replay << ", " << what << ": "
                                        << harness::format_mismatch(mismatches.front());
      }
    }
  }
}

// A prefill graph: capacities without decode rows (D_cap = 0, T_cap = T + 3: on CUDA the
// checked prefill-only kernels), seed and split, in one chain and the default four; valid, then
// with broken metadata (among it a run-time D of 1 that the capacities refuse), then valid again:
// every output, status word and content error like the reference's checked builds.
TEST_P(StepGraphTest, PrefillGraphsWithoutDecodeCapacityReplayLikeTheReference) {
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    harness::StepShape shape;
    shape.num_prefills = 3;
    shape.prefill_tokens_each = backend() == opt::Backend::kHost ? 4 : 300;
    shape.prefill_context = 900;
    shape.seed = 21;
    harness::StepCase c;
    c.step = harness::make_step(shape);
    c.schedule = schedule;
    c.c4a_per_layer = harness::make_c4a_indexer_outputs(c.step, schedule, 22);
    harness::StepCapacity extra;
    extra.extra_tokens = 3;
    harness::make_persistent(c, extra, 23);
    ASSERT_EQ(c.persistent->decode_capacity, 0);
    for (const opt::SharingMode mode : {opt::SharingMode::kSeed, opt::SharingMode::kSplit}) {
      harness::GraphStepBuffers buffers(backend(), c, mode);
      const harness::PersistentStepHost valid = buffers.host();
      for (const int32_t chains : {1, 4}) {
        opt::StepGraphSpec spec = buffers.spec();
        spec.chains = chains;
        opt::StepGraph graph(builder(), spec);
        const std::string where = schedule.name + (mode == opt::SharingMode::kSplit ? " split, " : " seed, ") +
                                  std::to_string(chains) + " chains";
        std::vector<harness::Mismatch> mismatches = harness::replay_and_compare(graph, buffers, schedule);
        ASSERT_TRUE(mismatches.empty()) << where << ": " << harness::format_mismatch(mismatches.front());
        std::mt19937_64 rng(60 + static_cast<uint64_t>(chains));
        for (int replay = 0; replay <= 6; ++replay) {
          buffers.host() = valid;  // each corruption starts from the valid step, not the last one
          harness::PersistentBuild broken{buffers.reference_inputs(0), valid.sizes};
          std::string what = "num_decode_tokens = 1 (run-time size)";
          if (replay < 6) {
            what = harness::corrupt_metadata(broken, rng);
          } else {
            broken.sizes.num_decode_tokens = 1;
          }
          upload_metadata(buffers, broken);
          mismatches = harness::replay_and_compare(graph, buffers, schedule);
          ASSERT_TRUE(mismatches.empty()) << where << ", " << what << ": " << harness::format_mismatch(mismatches.front());
        }
        buffers.host() = valid;
        buffers.upload();
        mismatches = harness::replay_and_compare(graph, buffers, schedule);
        ASSERT_TRUE(mismatches.empty()) << where << ", valid again: " << harness::format_mismatch(mismatches.front());
      }
    }
  }
}

TEST_P(StepGraphTest, ARecordedBuildNeedsCallerOwnedOutputs) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  harness::GraphStepBuffers buffers(backend(), schedule, capacities_for(backend()));
  opt::BuildRequest request = opt::layer_build_request(buffers.spec().capacities, 1, nullptr);
  request.run_time_sizes = buffers.spec().run_time_sizes;
  request.output = opt::OutputView{};
  builder().begin_recording(1);
  EXPECT_THROW(builder().build(request), std::invalid_argument);
  (void)builder().end_recording();
}

}  // namespace
}  // namespace dsv4::testing
