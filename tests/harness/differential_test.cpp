// The differential property on the host backend: reference == optimized uncached ==
// optimized cached, for every layer, on random valid steps of every schedule kind.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "harness/differential.h"
#include "harness/step_factory.h"
#include "property_util.h"

namespace dsv4::harness {
namespace {

using testing::host_only;
using testing::kReplayHint;
using testing::small_steps;

RC_GTEST_PROP(Differential, RandomSchedulesAgreeOnHost, ()) {
  const StepCase c = *gen_step_case(ScheduleChoice::kRandom, small_steps());
  DSV4_RC_ASSERT_AGREES(differential_check(c, host_only(), kReplayHint));
}

RC_GTEST_PROP(Differential, FlashStepsAgreeOnHost, ()) {
  const StepCase c = *gen_step_case(ScheduleChoice::kFlash, small_steps());
  const DifferentialSummary s = differential_check(c, host_only(), kReplayHint);
  DSV4_RC_ASSERT_AGREES(s);
  RC_ASSERT(s.backends.at(0).calls_cached == 23);
}

RC_GTEST_PROP(Differential, ProStepsAgreeOnHost, ()) {
  const StepCase c = *gen_step_case(ScheduleChoice::kPro, small_steps());
  const DifferentialSummary s = differential_check(c, host_only(), kReplayHint);
  DSV4_RC_ASSERT_AGREES(s);
  RC_ASSERT(s.backends.at(0).calls_cached == 31);
}

// One checker for many steps, as the CLI runs: the builder's workspace is recycled between
// steps, and nothing of an earlier step may leak into a later one.
TEST(Differential, OneCheckerAcrossManyStepsAgrees) {
  DifferentialChecker checker(host_only());
  const rc::Gen<StepCase> gen = gen_step_case(ScheduleChoice::kAny, small_steps());
  DifferentialSummary total;
  for (int i = 0; i < 60; ++i) total.add(checker.check(draw_step_case(gen, 500 + static_cast<uint64_t>(i), i % 101)));
  EXPECT_TRUE(total.ok()) << total.report();
  EXPECT_EQ(total.steps, 60);
  ASSERT_EQ(total.backends.size(), 1u);
  EXPECT_EQ(total.backends[0].calls_uncached, total.layers);
  EXPECT_LT(total.backends[0].calls_cached, total.backends[0].calls_uncached);
}

// A realistic Flash step from the deterministic factory: the numbers of SPEC §1's table.
TEST(Differential, FactoryFlashStepAgreesWith43To23Builds) {
  StepShape shape;
  shape.num_decodes = 6;
  shape.decode_tokens_each = 2;
  shape.decode_context = 3000;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 64;
  shape.prefill_context = 17000;
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  const ref::Step step = make_step(shape);
  const StepCase c{step, schedule, make_c4a_indexer_outputs(step, schedule, 3), {}};
  const DifferentialSummary s = differential_check(c, host_only());
  EXPECT_TRUE(s.ok()) << s.report();
  EXPECT_EQ(s.backends.at(0).calls_uncached, 43);
  EXPECT_EQ(s.backends.at(0).calls_cached, 23);
  EXPECT_EQ(s.reference_content_errors, 0);
}

}  // namespace
}  // namespace dsv4::harness
