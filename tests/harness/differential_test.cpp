// The differential property on every backend: reference == optimized uncached == optimized
// cached, for every layer, on random valid steps of every schedule kind, in random layouts.
#include <gtest/gtest.h>

#include "harness/differential.h"
#include "harness/persistent_buffers.h"
#include "harness/step_factory.h"
#include "property_util.h"
#include "support/backend_test.h"
#include "support/expectations.h"

namespace dsv4::testing {
namespace {

using harness::ScheduleChoice;

using Differential = BackendTest;
DSV4_ON_EVERY_BACKEND(Differential);

TEST_P(Differential, RandomSchedulesAgree) {
  check_property([this] {
    const harness::StepCase c = *harness::gen_step_case(ScheduleChoice::kRandom, small_steps());
    DSV4_RC_ASSERT_AGREES(harness::differential_check(c, on_this_backend(), kReplayHint));
  });
}

// Flash or Pro steps, with the cached path's call count (Flash 23, Pro 31).
void real_schedule_steps_agree(ScheduleChoice choice, const harness::DifferentialOptions& options) {
  check_property([&] {
    const harness::StepCase c = *harness::gen_step_case(choice, small_steps());
    const harness::DifferentialSummary s = harness::differential_check(c, options, kReplayHint);
    DSV4_RC_ASSERT_AGREES(s);
    RC_ASSERT(s.backends.at(0).calls_cached == harness::expected_builder_calls(c.schedule, true));
  });
}
TEST_P(Differential, FlashStepsAgree) { real_schedule_steps_agree(ScheduleChoice::kFlash, on_this_backend()); }
TEST_P(Differential, ProStepsAgree) { real_schedule_steps_agree(ScheduleChoice::kPro, on_this_backend()); }

// SPEC §7: every step put into persistent buffers (capacities past T, D, T - D and R with stale
// contents and sentinel request ids, tables past R, C128A at P_cap, caller-owned outputs) also
// recorded as one StepGraph and replayed with its run-time sizes: every layer equals the
// reference's checked build, with one build per cache key and per C4A layer. Random schedules
// (the Flash and Pro properties above take this path for a third of their steps).
TEST_P(Differential, StepsInPersistentBuffersRecordedAsAStepGraphAgree) {
  check_property([this] {
    harness::StepCase c = *harness::gen_step_case(ScheduleChoice::kRandom, small_steps());
    if (!c.persistent) harness::make_persistent(c, *harness::gen_step_capacity(), *rc::gen::arbitrary<uint64_t>());
    const harness::DifferentialSummary s = harness::differential_check(c, on_this_backend(), kReplayHint);
    DSV4_RC_ASSERT_AGREES(s);
    RC_ASSERT(s.backends.at(0).graph_steps == 1);
    RC_ASSERT(s.backends.at(0).calls_graph == harness::expected_builder_calls(c.schedule, true));
    RC_ASSERT(s.engine.graph == 1);
  });
}

// The same steps as a split step graph (SPEC §8's two segments, the SWA segment built once):
// both segments of every layer equal the reference's checked builds cut at column W, with one
// build more than the seed's graph (for a schedule with any layer).
TEST_P(Differential, StepsInPersistentBuffersRecordedAsASplitStepGraphAgree) {
  harness::DifferentialOptions split = on_this_backend();
  split.modes = {opt::SharingMode::kSplit};
  check_property([&] {
    harness::StepCase c = *harness::gen_step_case(ScheduleChoice::kRandom, small_steps());
    if (!c.persistent) harness::make_persistent(c, *harness::gen_step_capacity(), *rc::gen::arbitrary<uint64_t>());
    const harness::DifferentialSummary s = harness::differential_check(c, split, kReplayHint);
    DSV4_RC_ASSERT_AGREES(s);
    RC_ASSERT(s.backends.at(0).mode == opt::SharingMode::kSplit);
    RC_ASSERT(s.backends.at(0).graph_steps == 1);
    RC_ASSERT(s.backends.at(0).calls_graph ==
              harness::expected_builder_calls(c.schedule, true) + (c.schedule.num_layers() > 0 ? 1 : 0));
  });
}

// One checker for many steps, as the CLI runs: the builder's workspace is recycled between
// steps, and nothing of an earlier step may leak into a later one.
TEST_P(Differential, OneCheckerAcrossManyStepsAgrees) {
  harness::DifferentialChecker checker(on_this_backend());
  const rc::Gen<harness::StepCase> gen = harness::gen_step_case(ScheduleChoice::kAny, small_steps());
  harness::DifferentialSummary total;
  for (int i = 0; i < 60; ++i) total.add(checker.check(harness::draw(gen, 500 + static_cast<uint64_t>(i), i % 101)));
  EXPECT_TRUE(agrees(total));
  EXPECT_EQ(total.steps, 60);
  ASSERT_EQ(total.backends.size(), 1u);
  EXPECT_EQ(total.backends[0].calls_uncached, total.layers);
  EXPECT_LT(total.backends[0].calls_cached, total.backends[0].calls_uncached);
  // SPEC §7 layouts among them, the graph path on the same builder between eager steps.
  EXPECT_GT(total.engine.graph, 0);
  EXPECT_EQ(total.backends[0].graph_steps, total.engine.graph);
  EXPECT_GT(total.engine.spans_offsets, 0);
  EXPECT_GT(total.engine.persistent_tables, 0);
}

// A realistic Flash step from the deterministic factory: 43 builds uncached, 23 cached.
TEST_P(Differential, FactoryFlashStepAgrees) {
  harness::StepShape shape;
  shape.num_decodes = 6;
  shape.decode_tokens_each = 2;
  shape.decode_context = 3000;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 64;
  shape.prefill_context = 17000;
  harness::StepCase c;
  c.schedule = ref::deepseek_v4_flash();
  c.step = harness::make_step(shape);
  c.c4a_per_layer = harness::make_c4a_indexer_outputs(c.step, c.schedule, 3);
  const harness::DifferentialSummary s = harness::differential_check(c, on_this_backend());
  EXPECT_TRUE(agrees(s));
  EXPECT_EQ(s.backends.at(0).calls_uncached, harness::expected_builder_calls(c.schedule, false));
  EXPECT_EQ(s.backends.at(0).calls_cached, harness::expected_builder_calls(c.schedule, true));
  EXPECT_EQ(s.reference_content_errors, 0);
}

}  // namespace
}  // namespace dsv4::testing
