// SPEC §8 properties on every backend: in every sharing mode (seed, split, tail-only), lazily
// and with the cacheable builds in one launch, on random steps and the Flash / Pro schedules
// with random index-source assignments: every layer's output equals its SPEC §3 output in the
// mode's form, builder calls and launches follow SPEC §8 (counted around the builder, expected
// from the case alone: harness/sharing_plan.h), hits are the shared build's buffers, a
// tail-only output used after the next C4A build of its shape and any output after end_step
// are refused, and corrupted steps count the content errors SPEC §8 says (the SWA segment's
// once). Also the shared SWA segment on random builds, and the SPEC §8 call counts of the
// real schedules (the one place these numbers are written).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "harness/differential.h"
#include "harness/index_sources.h"
#include "harness/sharing_plan.h"
#include "harness/step_factory.h"
#include "property_util.h"
#include "reference/sharing_modes.h"
#include "support/backend_test.h"
#include "support/expectations.h"

namespace dsv4::testing {
namespace {

using harness::ScheduleChoice;
using opt::SharingMode;

// Any valid build, corrupted ones included: the segment is the window part of the output, every
// length is W, and the window's content errors are a part of the build's.
RC_GTEST_PROP(WindowSegment, IsTheFirstWColumnsOfEveryBuild, ()) {
  const ref::BuilderInputs in = *harness::gen_builder_inputs();
  const ref::BuilderOutput combined = ref::build_mixed_sparse_indices(in);
  const ref::BuilderOutput segment = ref::build_mixed_sparse_indices(ref::window_segment_inputs(in));
  RC_ASSERT(segment.sparse_indices == combined.sparse_indices.leftCols(in.window));
  RC_ASSERT((segment.sparse_lens.array() == in.window).all());
  RC_ASSERT(segment.content_errors <= combined.content_errors);
  const ref::SplitOutput split = ref::split_output(combined, in.window);
  RC_ASSERT(split.swa_indices == segment.sparse_indices);
  RC_ASSERT((split.compressed_lens.array() >= 0).all());
  ref::IndexMatrix joined(combined.sparse_indices.rows(), combined.sparse_indices.cols());
  joined << split.swa_indices, split.compressed_indices;
  RC_ASSERT(joined == combined.sparse_indices);
}

harness::DifferentialOptions every_mode(harness::DifferentialOptions o) {
  o.modes = {SharingMode::kSeed, SharingMode::kSplit, SharingMode::kTailOnly};
  o.one_launch = true;
  return o;
}
// The two new forms, lazily and in one launch: the real schedules' 43 and 61 layers through
// every path are what the sanitizer job's time goes to (the seed paths with index sources run
// in the random-schedule property and in `dsv4 verify --mode all`).
harness::DifferentialOptions new_modes(harness::DifferentialOptions o) {
  o.modes = {SharingMode::kSplit, SharingMode::kTailOnly};
  o.one_launch = true;
  return o;
}

using SharingModes = BackendTest;
DSV4_ON_EVERY_BACKEND(SharingModes);

void steps_agree(ScheduleChoice choice, const harness::DifferentialOptions& options) {
  check_property([&] {
    const harness::StepCase c = *harness::gen_index_sources(*harness::gen_step_case(choice, small_steps()));
    const harness::DifferentialSummary s = harness::differential_check(c, options, kReplayHint);
    DSV4_RC_ASSERT_AGREES(s);
    RC_ASSERT(s.backends.size() == options.modes.size());
    const harness::SharingPlan plan = harness::sharing_plan(c);
    for (size_t m = 0; m < options.modes.size(); ++m) {
      RC_ASSERT(s.backends[m].calls_cached == harness::expected_calls(plan, options.modes[m], false, true).builds);
    }
  });
}
TEST_P(SharingModes, RandomSchedulesAgreeInEveryMode) { steps_agree(ScheduleChoice::kRandom, every_mode(on_this_backend())); }
TEST_P(SharingModes, FlashStepsAgreeInSplitAndTailModes) { steps_agree(ScheduleChoice::kFlash, new_modes(on_this_backend())); }
TEST_P(SharingModes, ProStepsAgreeInSplitAndTailModes) { steps_agree(ScheduleChoice::kPro, new_modes(on_this_backend())); }

// Corrupted steps: every mode counts the errors of its builds, the SWA segment's once.
TEST_P(SharingModes, CorruptedStepsCountTheErrorsOfTheirBuilds) {
  check_property([this] {
    const auto choice = *rc::gen::element(ScheduleChoice::kRandom, ScheduleChoice::kFlash, ScheduleChoice::kPro);
    const harness::StepCase c = *harness::gen_index_sources(*harness::gen_corrupted_step_case(choice, small_steps()));
    harness::DifferentialOptions options = new_modes(on_this_backend());
    options.content_errors = harness::ContentErrorPolicy::kMustMatch;
    const harness::DifferentialSummary s = harness::differential_check(c, options, kReplayHint);
    DSV4_RC_ASSERT_AGREES(s);
    // (A source copies its first layer's indexer output over a corrupted later one's.)
    RC_CLASSIFY(s.reference_content_errors > 0, "with content errors");
  });
}

// One checker for many steps (the builder's workspace recycled between steps): no mode answers
// a step with an earlier step's outputs.
TEST_P(SharingModes, OneCheckerAcrossManyStepsAgreesInEveryMode) {
  harness::DifferentialChecker checker(every_mode(on_this_backend()));
  const rc::Gen<harness::StepCase> gen = harness::gen_step_case(ScheduleChoice::kAny, small_steps());
  harness::DifferentialSummary total;
  for (int i = 0; i < 40; ++i) {
    const uint64_t seed = 900 + static_cast<uint64_t>(i);
    const int size = 40 + i;  // sizes where schedules have layers and steps tokens
    total.add(checker.check(harness::draw(harness::gen_index_sources(harness::draw(gen, seed, size)), seed, size)));
  }
  EXPECT_TRUE(agrees(total));
  EXPECT_EQ(total.steps, 40);
  EXPECT_GT(total.layers, 400);
  ASSERT_EQ(total.backends.size(), 3u);
  EXPECT_LT(total.backends[2].calls_cached, total.backends[2].calls_uncached);
}

// A realistic Flash step: split and tail-only agree with the reference layer by layer.
TEST_P(SharingModes, FactoryFlashStepAgreesInEveryMode) {
  harness::StepShape shape;
  shape.num_decodes = 5;
  shape.decode_tokens_each = 2;
  shape.decode_context = 3000;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 48;
  shape.prefill_context = 9000;
  harness::StepCase c;
  c.schedule = ref::deepseek_v4_flash();
  c.step = harness::make_step(shape);
  c.c4a_per_layer = harness::make_c4a_indexer_outputs(c.step, c.schedule, 5);
  const harness::DifferentialSummary s = harness::differential_check(c, every_mode(on_this_backend()));
  EXPECT_TRUE(agrees(s));
  ASSERT_EQ(s.backends.size(), 3u);
  EXPECT_EQ(s.backends[1].backend, std::string(opt::backend_name(backend())) + " split");
  EXPECT_EQ(s.backends[1].calls_cached, 24);  // 23 + the SWA segment
  EXPECT_EQ(s.backends[2].calls_cached, 23);
}

// SPEC §8's call counts on the real schedules, worked out from the schedule alone.
TEST(SharingPlan, RealSchedulesWithoutIndexSources) {
  struct Want {
    SharingMode mode;
    bool one_launch;
    int64_t builds, launches;
  };
  const auto counts = [](const harness::StepCase& c, const Want& w) {
    const harness::ExpectedCalls e = harness::expected_calls(harness::sharing_plan(c), w.mode, w.one_launch, true);
    EXPECT_EQ(e.builds, w.builds) << c.schedule.name << " " << opt::sharing_mode_name(w.mode) << " " << w.one_launch;
    EXPECT_EQ(e.launches, w.launches) << c.schedule.name << " " << opt::sharing_mode_name(w.mode) << " " << w.one_launch;
  };
  harness::StepCase flash;
  flash.schedule = ref::deepseek_v4_flash();
  flash.c4a_per_layer.resize(43);
  // Flash: 2 SWA-only, 21 C4A, 20 C128A. One launch: SWA-only + C128A (+ the segment, or the
  // window columns of the tail-only buffer) in one call.
  for (const Want& w : {Want{SharingMode::kSeed, false, 23, 23}, Want{SharingMode::kSeed, true, 23, 22},
                        Want{SharingMode::kSplit, false, 24, 24}, Want{SharingMode::kSplit, true, 24, 22},
                        Want{SharingMode::kTailOnly, false, 23, 23}, Want{SharingMode::kTailOnly, true, 24, 22}})
    counts(flash, w);
  harness::StepCase pro;
  pro.schedule = ref::deepseek_v4_pro();
  pro.c4a_per_layer.resize(61);
  // Pro: no SWA-only layer, 30 C4A, 31 C128A.
  for (const Want& w : {Want{SharingMode::kSeed, false, 31, 31}, Want{SharingMode::kSeed, true, 31, 31},
                        Want{SharingMode::kSplit, false, 32, 32}, Want{SharingMode::kSplit, true, 32, 31},
                        Want{SharingMode::kTailOnly, false, 31, 31}, Want{SharingMode::kTailOnly, true, 32, 31}})
    counts(pro, w);
  EXPECT_EQ(harness::expected_calls(harness::sharing_plan(flash), SharingMode::kSeed, false, false).builds, 43);
  EXPECT_EQ(harness::expected_calls(harness::sharing_plan(flash), SharingMode::kSplit, false, false).builds, 86);
}

// Index sources: one per (source, top-k, widths); an unsourced C4A layer builds every time.
TEST(SharingPlan, IndexSourcesShareTheirLayersBuild) {
  harness::StepCase flash;
  flash.schedule = ref::deepseek_v4_flash();
  flash.c4a_per_layer.resize(43);
  std::vector<int32_t> sources(43, -1);
  for (int32_t l = 0; l < 43; ++l) sources[static_cast<size_t>(l)] = l % 2 == 0 ? 7 : -1;  // C4A layers: 2, 4, ...
  const harness::StepCase one = harness::with_index_sources(flash, sources);
  EXPECT_EQ(harness::sharing_plan(one).groups, 3);  // SWA-only, C128A, source 7
  for (int32_t l = 2, c4a = 0; l < 43; l += 2, ++c4a) sources[static_cast<size_t>(l)] = c4a / 3;  // runs of 3
  EXPECT_EQ(harness::sharing_plan(harness::with_index_sources(flash, sources)).groups, 2 + 7);
  sources[2] = -1;  // one layer left unsourced: its own build, and its run of 3 one layer short
  EXPECT_EQ(harness::sharing_plan(harness::with_index_sources(flash, sources)).groups, 2 + 1 + 7);
  harness::StepCase topk = harness::with_index_sources(flash, std::vector<int32_t>(43, 0));
  topk.layout.c4a_topk = std::vector<int32_t>(43, -1);
  topk.layout.c4a_topk[4] = 256;  // the same source, another top-k: keyed apart
  EXPECT_EQ(harness::sharing_plan(topk).groups, 2 + 2);
}

// Layers of one source get the first one's indexer output; other layers keep theirs.
TEST(IndexSources, LayersOfOneSourceCarryTheSameIndexerOutput) {
  harness::StepCase c;
  for (uint64_t seed = 5; c.step.num_tokens() == 0; ++seed) {
    c = harness::draw(harness::gen_step_case(ScheduleChoice::kFlash, small_steps()), seed, 60);
  }
  std::vector<int32_t> sources(43, -1);
  sources[2] = sources[6] = 1;
  sources[4] = 3;
  const harness::StepCase s = harness::with_index_sources(c, sources);
  EXPECT_EQ(s.c4a_per_layer[6].prefill_topk, c.c4a_per_layer[2].prefill_topk);
  EXPECT_EQ(s.c4a_per_layer[6].decode_local, c.c4a_per_layer[2].decode_local);
  EXPECT_EQ(s.c4a_per_layer[4].prefill_topk, c.c4a_per_layer[4].prefill_topk);
  EXPECT_EQ(harness::c4a_source(s.layout, 6), 1);
  EXPECT_EQ(harness::c4a_source(s.layout, 8), -1);
  EXPECT_EQ(harness::c4a_source(s.layout, 0), -1);  // SWA-only: no source whatever was given
}

}  // namespace
}  // namespace dsv4::testing
