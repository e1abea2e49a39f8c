// The `dsv4 verify` run: deterministic whatever the number of worker threads, every step
// replayable alone, corrupted steps where planned; and `dsv4 replay` on the shipped captures.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/capture.h"
#include "harness/verify_run.h"
#include "property_util.h"

namespace dsv4::harness {
namespace {

VerifyOptions small_run(int jobs) {
  VerifyOptions o;
  o.steps = 40;
  o.seed = 5;
  o.jobs = jobs;
  o.limits = testing::small_steps();
  o.backends = {opt::Backend::kHost};
  o.progress = false;
  return o;
}

TEST(VerifyRun, TotalsDoNotDependOnTheNumberOfThreads) {
  std::ostringstream progress;
  const VerifyResult one = run_verify(small_run(1), progress);
  const VerifyResult two = run_verify(small_run(2), progress);
  EXPECT_TRUE(one.summary.ok()) << one.summary.report();
  EXPECT_EQ(one.summary.steps, 40);
  EXPECT_EQ(one.corrupted_steps, 4);  // steps 9, 19, 29, 39
  EXPECT_GT(one.summary.reference_content_errors, 0);
  EXPECT_EQ(one.summary.layers, two.summary.layers);
  EXPECT_EQ(one.summary.reference_content_errors, two.summary.reference_content_errors);
  ASSERT_EQ(one.summary.backends.size(), 1u);
  ASSERT_EQ(two.summary.backends.size(), 1u);
  EXPECT_EQ(one.summary.backends[0].calls_uncached, one.summary.layers);
  EXPECT_EQ(one.summary.backends[0].calls_cached, two.summary.backends[0].calls_cached);
  EXPECT_EQ(one.summary.backends[0].content_errors, one.summary.reference_content_errors);
}

TEST(VerifyRun, AStepReplaysAloneAsInTheFullRun) {
  VerifyOptions o = small_run(1);
  const StepCase in_run = draw_planned_step(o, plan_step(o, 17));
  o.only_step = 17;
  EXPECT_EQ(describe(draw_planned_step(o, plan_step(o, 17))), describe(in_run));
  EXPECT_NE(replay_command(o, 17).find("--seed 5"), std::string::npos) << replay_command(o, 17);
  EXPECT_NE(replay_command(o, 17).find("--step 17"), std::string::npos) << replay_command(o, 17);
  std::ostringstream progress;
  const VerifyResult r = run_verify(o, progress);
  EXPECT_EQ(r.summary.steps, 1);
  EXPECT_TRUE(r.summary.ok()) << r.summary.report();
}

TEST(VerifyRun, SchedulesTakeTurnsAndCorruptedStepsAreWherePlanned) {
  const VerifyOptions o = small_run(1);
  EXPECT_EQ(plan_step(o, 0).schedule, ScheduleChoice::kFlash);
  EXPECT_EQ(plan_step(o, 1).schedule, ScheduleChoice::kPro);
  EXPECT_EQ(plan_step(o, 2).schedule, ScheduleChoice::kRandom);
  EXPECT_FALSE(plan_step(o, 8).corrupted);
  EXPECT_TRUE(plan_step(o, 9).corrupted);
  EXPECT_NE(plan_step(o, 3).seed, plan_step(o, 4).seed);
}

TEST(VerifyRun, SummaryTableShowsEveryColumn) {
  std::ostringstream progress, table;
  const VerifyResult r = run_verify(small_run(2), progress);
  print_summary_table(table, r.summary, r.seconds);
  for (const char* column : {"backend", "steps", "layers", "calls uncached", "calls cached",
                             "mismatches", "content errors", "reference", "host", "result: PASS"})
    EXPECT_NE(table.str().find(column), std::string::npos) << column << "\n" << table.str();
}

// `dsv4 replay DIR`: the shipped captures agree on every path, with SPEC §1's call counts.
TEST(Replay, ShippedCapturesAgreeOnHost) {
  for (const auto& [name, cached_calls] : {std::pair<const char*, int64_t>{"capture_flash_mixed", 23},
                                           {"capture_flash_decode", 23},
                                           {"capture_pro_prefill", 31}}) {
    Capture cap = load_capture(std::string(DSV4_TEST_DATA_DIR) + "/" + name);
    const StepCase c{std::move(cap.step), std::move(cap.schedule), std::move(cap.c4a_per_layer), {}};
    const DifferentialSummary s = differential_check(c, testing::host_only(), std::string("dsv4 replay ") + name);
    EXPECT_TRUE(s.ok()) << name << "\n" << s.report();
    ASSERT_EQ(s.backends.size(), 1u);
    EXPECT_EQ(s.backends[0].calls_cached, cached_calls) << name;
    EXPECT_EQ(s.reference_content_errors, 0) << name;
  }
}

}  // namespace
}  // namespace dsv4::harness
