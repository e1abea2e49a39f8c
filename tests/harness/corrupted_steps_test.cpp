// Corrupted steps (SPEC §4 content errors on structurally valid steps): the reference and
// both optimized paths count the same errors per layer and write -1 at the same places.
#include <gtest/gtest.h>

#include <random>

#include "harness/differential.h"
#include "harness/persistent_buffers.h"
#include "property_util.h"
#include "support/backend_test.h"

namespace dsv4::testing {
namespace {

using harness::ScheduleChoice;

using CorruptedSteps = BackendTest;
DSV4_ON_EVERY_BACKEND(CorruptedSteps);

harness::DifferentialOptions must_match(harness::DifferentialOptions o) {
  o.content_errors = harness::ContentErrorPolicy::kMustMatch;
  return o;
}

// The uncached path counts every layer's errors, so its total is the reference's.
void corrupted_steps_agree(const rc::Gen<ScheduleChoice>& schedules, const harness::DifferentialOptions& options) {
  check_property([&] {
    const harness::StepCase c = *harness::gen_corrupted_step_case(*schedules, small_steps());
    const harness::DifferentialSummary s = harness::differential_check(c, must_match(options), kReplayHint);
    DSV4_RC_ASSERT_AGREES(s);
    RC_ASSERT(s.reference_content_errors > 0);
    RC_ASSERT(s.backends.at(0).content_errors == s.reference_content_errors);
  });
}

TEST_P(CorruptedSteps, ErrorCountsAndMinusOnesAgree) {
  corrupted_steps_agree(rc::gen::just(ScheduleChoice::kRandom), on_this_backend());
}

TEST_P(CorruptedSteps, RealSchedulesAgree) {
  corrupted_steps_agree(rc::gen::element(ScheduleChoice::kFlash, ScheduleChoice::kPro), on_this_backend());
}

// SPEC §7: corrupted steps in persistent buffers, half of them with a metadata entry or a
// run-time size broken there too: the graph path's outputs, content errors and status words
// equal the reference's checked builds of the same buffers. Random schedules (the real ones
// take this path for a third of their steps in RealSchedulesAgree). In the seed and the split
// form (SPEC §8: the SWA segment's errors counted once per replay).
void corrupted_persistent_steps_agree(const harness::DifferentialOptions& options) {
  check_property([&] {
    harness::StepCase c = *harness::gen_corrupted_step_case(ScheduleChoice::kRandom, small_steps());
    if (!c.persistent) {
      harness::make_persistent(c, *harness::gen_step_capacity(), *rc::gen::arbitrary<uint64_t>());
      if (*rc::gen::arbitrary<bool>()) {
        std::mt19937_64 rng(*rc::gen::arbitrary<uint64_t>());
        c.notes.push_back(harness::corrupt_metadata(*c.persistent, rng));
      }
    }
    const harness::DifferentialSummary s = harness::differential_check(c, must_match(options), kReplayHint);
    DSV4_RC_ASSERT_AGREES(s);
    RC_ASSERT(s.backends.at(0).graph_steps == 1);
  });
}
TEST_P(CorruptedSteps, InPersistentBuffersTheGraphPathAgrees) { corrupted_persistent_steps_agree(on_this_backend()); }
TEST_P(CorruptedSteps, InPersistentBuffersTheSplitGraphPathAgrees) {
  harness::DifferentialOptions split = on_this_backend();
  split.modes = {opt::SharingMode::kSplit};
  corrupted_persistent_steps_agree(split);
}

// The same corrupted step under the valid-step policy is a failure: the harness does not
// let content errors pass silently.
TEST(CorruptedStepsReport, AreFailuresUnderTheValidStepPolicy) {
  const harness::StepCase c = harness::draw(harness::gen_corrupted_step_case(ScheduleChoice::kFlash, small_steps()), 3, 50);
  const harness::DifferentialSummary s = harness::differential_check(c, host_only());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.report().find("content errors"), std::string::npos) << s.report();
}

// The report says how many errors the reference counted; it used to print "content errors:
// reference 0, optimized 0 on a valid step: N", two zeros that were never compared.
TEST(CorruptedStepsReport, OnAValidStepTheReportCountsTheErrorsNotZeroAgainstZero) {
  const harness::StepCase c = harness::draw(harness::gen_corrupted_step_case(ScheduleChoice::kFlash, small_steps()), 3, 50);
  const harness::DifferentialSummary s = harness::differential_check(c, host_only());
  ASSERT_FALSE(s.ok());
  const std::string report = s.report();
  EXPECT_NE(report.find("[reference] layer " + std::to_string(s.reference_first_error_layer)), std::string::npos)
      << report;
  EXPECT_NE(report.find("content errors on a valid step"), std::string::npos) << report;
  EXPECT_NE(report.find(std::to_string(s.reference_content_errors) + " in all layers"), std::string::npos) << report;
  EXPECT_EQ(report.find("reference 0, optimized 0"), std::string::npos) << report;
}

}  // namespace
}  // namespace dsv4::testing
