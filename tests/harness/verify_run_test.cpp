// The `dsv4 verify` run: deterministic whatever the number of worker threads, every step
// replayable alone, corrupted steps where planned; and `dsv4 replay` on the shipped captures.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <sstream>

#include "harness/capture.h"
#include "harness/errors.h"
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
  // The SPEC §7 line: the run's counts, the graph path's builds on the host backend.
  const DifferentialSummary& s = r.summary;
  EXPECT_GT(s.engine.graph, 0);
  EXPECT_GT(s.engine.spans_offsets, 0);
  EXPECT_GT(s.engine.persistent_tables, 0);
  EXPECT_EQ(s.backends.at(0).graph_steps, s.engine.graph);
  const std::string line = "  SPEC §7: " + std::to_string(s.engine.graph) + " of 40 steps also in persistent buffers, " +
                           "recorded as a step graph and replayed with run-time sizes (builds: host " +
                           std::to_string(s.backends.at(0).calls_graph) + "); " + std::to_string(s.engine.spans_offsets) +
                           " with block spans or base offsets; " + std::to_string(s.engine.persistent_tables) +
                           " with block tables past R or strided\n";
  EXPECT_NE(table.str().find(line), std::string::npos) << line << table.str();
}

// With every SPEC §8 mode, the table has a row per mode, and the SPEC §7 line counts the graph
// path's builds of the seed and split rows (tail-only has no graph form; a split graph builds
// the SWA segment once more), also when the totals of several threads are merged.
TEST(VerifyRun, SpecSevenLineCountsTheSeedAndSplitGraphBuilds) {
  VerifyOptions o = small_run(3);
  o.steps = 12;
  o.modes = {opt::SharingMode::kSeed, opt::SharingMode::kSplit, opt::SharingMode::kTailOnly};
  std::ostringstream progress, table;
  const VerifyResult r = run_verify(o, progress);
  print_summary_table(table, r.summary, r.seconds);
  ASSERT_EQ(r.summary.backends.size(), 3u);
  EXPECT_EQ(r.summary.backends[1].backend, "host split");
  EXPECT_EQ(r.summary.backends[1].mode, opt::SharingMode::kSplit);
  EXPECT_EQ(r.summary.backends[2].mode, opt::SharingMode::kTailOnly);
  const DifferentialSummary& s = r.summary;
  EXPECT_EQ(s.backends[1].graph_steps, s.backends[0].graph_steps);
  EXPECT_EQ(s.backends[1].calls_graph, s.backends[0].calls_graph + s.backends[1].graph_steps);
  EXPECT_EQ(s.backends[2].graph_steps, 0);
  const std::string builds = "(builds: host " + std::to_string(s.backends[0].calls_graph) + " host split " +
                             std::to_string(s.backends[1].calls_graph) + "); ";
  EXPECT_NE(table.str().find(builds), std::string::npos) << table.str();
}

// Options outside their documented range are rejected before any work (they used to crash:
// --max-size 4294967295 became -1 and then a modulus of 0; --step INT64_MAX overflowed).
TEST(VerifyRun, OptionsOutsideTheirRangeAreRejectedNamingTheOption) {
  const struct {
    const char* option;
    std::function<void(VerifyOptions&)> set;
  } cases[] = {
      {"--max-size", [](VerifyOptions& o) { o.max_size = -1; }},
      {"--max-size", [](VerifyOptions& o) { o.max_size = 101; }},
      {"--step", [](VerifyOptions& o) { o.only_step = std::numeric_limits<int64_t>::max(); }},
      {"--steps", [](VerifyOptions& o) { o.steps = -1; }},
      {"--max-tokens", [](VerifyOptions& o) { o.limits.max_tokens = std::numeric_limits<int32_t>::min(); }},
      {"--max-tokens", [](VerifyOptions& o) { o.limits.max_tokens = 8193; }},
      {"--jobs", [](VerifyOptions& o) { o.jobs = -3; }},
      {"--corrupted-every", [](VerifyOptions& o) { o.corrupted_every = -1; }},
      {"--max-step-bytes", [](VerifyOptions& o) { o.resources.max_step_output_bytes = 5; }},
  };
  for (const auto& c : cases) {
    VerifyOptions o = small_run(1);
    c.set(o);
    std::ostringstream progress;
    try {
      run_verify(o, progress);
      ADD_FAILURE() << c.option << ": no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.option), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("allowed range"), std::string::npos) << e.what();
    }
    EXPECT_THROW(plan_step(o, 0), InputError) << c.option;
  }
  EXPECT_THROW(plan_step(small_run(1), -1), InputError);
}

// A generated step whose outputs pass --max-step-bytes stops the run, naming the step, its
// replay line and the limit, before the step is built.
TEST(VerifyRun, AStepPastTheOutputLimitStopsTheRunNamingTheLimit) {
  VerifyOptions o = small_run(2);
  o.steps = 200;  // sizes up to 100: steps of hundreds of tokens
  o.schedules = {ScheduleChoice::kPro};
  o.limits.max_tokens = 512;
  o.resources.max_step_output_bytes = kMinStepOutputBytes;
  std::ostringstream progress;
  try {
    run_verify(o, progress);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("verify step "), std::string::npos) << msg;
    EXPECT_NE(msg.find("--max-step-bytes 1048576"), std::string::npos) << msg;  // in the replay line
    EXPECT_NE(msg.find("above the limit of 1048576 bytes (1.0 MiB) (--max-step-bytes)"), std::string::npos) << msg;
  }
}

// `dsv4 replay DIR`: the shipped captures agree on every path, with SPEC §1's call counts; the
// one of an engine's persistent buffers (format version 2) on the graph path too.
TEST(Replay, ShippedCapturesAgreeOnHost) {
  for (const auto& [name, cached_calls] : {std::pair<const char*, int64_t>{"capture_flash_mixed", 23},
                                           {"capture_flash_decode", 23},
                                           {"capture_pro_prefill", 31},
                                           {"capture_flash_engine", 23}}) {
    const StepCase c = step_case(load_capture(std::string(DSV4_TEST_DATA_DIR) + "/" + name));
    const DifferentialSummary s = differential_check(c, testing::host_only(), std::string("dsv4 replay ") + name);
    EXPECT_TRUE(s.ok()) << name << "\n" << s.report();
    ASSERT_EQ(s.backends.size(), 1u);
    EXPECT_EQ(s.backends[0].calls_cached, cached_calls) << name;
    EXPECT_EQ(s.backends[0].calls_graph, c.persistent ? cached_calls : 0) << name;
    EXPECT_EQ(s.reference_content_errors, 0) << name;
  }
}

}  // namespace
}  // namespace dsv4::harness
