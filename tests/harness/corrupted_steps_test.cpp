// Corrupted steps (SPEC §4 content errors on structurally valid steps): the reference and
// both optimized paths count the same errors per layer and write -1 at the same places.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "harness/differential.h"
#include "property_util.h"

namespace dsv4::harness {
namespace {

using testing::kReplayHint;
using testing::small_steps;

DifferentialOptions must_match() {
  DifferentialOptions o = testing::host_only();
  o.content_errors = ContentErrorPolicy::kMustMatch;
  return o;
}

RC_GTEST_PROP(CorruptedSteps, ErrorCountsAndMinusOnesAgreeOnHost, ()) {
  const StepCase c = *gen_corrupted_step_case(ScheduleChoice::kRandom, small_steps());
  const DifferentialSummary s = differential_check(c, must_match(), kReplayHint);
  DSV4_RC_ASSERT_AGREES(s);
  RC_ASSERT(s.reference_content_errors > 0);
  // The uncached path counts every layer's errors, so its total is the reference's.
  RC_ASSERT(s.backends.at(0).content_errors == s.reference_content_errors);
}

RC_GTEST_PROP(CorruptedSteps, RealSchedulesAgreeOnHost, ()) {
  const ScheduleChoice choice = *rc::gen::element(ScheduleChoice::kFlash, ScheduleChoice::kPro);
  const StepCase c = *gen_corrupted_step_case(choice, small_steps());
  const DifferentialSummary s = differential_check(c, must_match(), kReplayHint);
  DSV4_RC_ASSERT_AGREES(s);
  RC_ASSERT(s.backends.at(0).content_errors == s.reference_content_errors);
}

// The same corrupted step under the valid-step policy is a failure: the harness does not
// let content errors pass silently.
TEST(CorruptedSteps, AreFailuresUnderTheValidStepPolicy) {
  const StepCase c = draw_step_case(gen_corrupted_step_case(ScheduleChoice::kFlash, small_steps()), 3, 50);
  const DifferentialSummary s = differential_check(c, testing::host_only());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.report().find("content errors"), std::string::npos) << s.report();
}

// The report says how many errors the reference counted; it used to print "content errors:
// reference 0, optimized 0 on a valid step: N", two zeros that were never compared.
TEST(CorruptedSteps, OnAValidStepTheReportCountsTheErrorsNotZeroAgainstZero) {
  const StepCase c = draw_step_case(gen_corrupted_step_case(ScheduleChoice::kFlash, small_steps()), 3, 50);
  const DifferentialSummary s = differential_check(c, testing::host_only());
  ASSERT_FALSE(s.ok());
  const std::string report = s.report();
  EXPECT_NE(report.find("[reference] layer " + std::to_string(s.reference_first_error_layer)), std::string::npos)
      << report;
  EXPECT_NE(report.find("content errors on a valid step"), std::string::npos) << report;
  EXPECT_NE(report.find(std::to_string(s.reference_content_errors) + " in all layers"), std::string::npos) << report;
  EXPECT_EQ(report.find("reference 0, optimized 0"), std::string::npos) << report;
}

}  // namespace
}  // namespace dsv4::harness
