// The `dsv4 verify` run: N random steps drawn from one seed, each through the differential
// check on every chosen backend, spread over worker threads; a progress line on stderr and
// a summary table at the end.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/differential.h"
#include "harness/generators.h"

namespace dsv4::harness {

struct VerifyOptions {
  int64_t steps = 500;
  uint64_t seed = 1;
  std::vector<ScheduleChoice> schedules{ScheduleChoice::kFlash, ScheduleChoice::kPro,
                                        ScheduleChoice::kRandom};  // step i uses i % size
  std::string schedule_arg = "all";    // as given on the command line (for replay lines)
  std::string backend_arg = "all";
  std::vector<opt::Backend> backends;  // empty: every backend present
  StepLimits limits{256, 16, 20000, 0};
  int max_size = 100;                  // RapidCheck size of step i: i % (max_size + 1)
  int corrupted_every = 10;            // every k-th step is a corrupted step; 0: none
  int64_t only_step = -1;              // >= 0: run just this step (to replay a failure)
  int jobs = 0;                        // worker threads; 0: hardware concurrency
  bool progress = true;
};

// What step i of a run is: its schedule choice, RapidCheck size, seed and validity.
struct StepPlan {
  ScheduleChoice schedule = ScheduleChoice::kRandom;
  int size = 0;
  uint64_t seed = 0;
  bool corrupted = false;
};
StepPlan plan_step(const VerifyOptions& options, int64_t step);
StepCase draw_planned_step(const VerifyOptions& options, const StepPlan& plan);

// The command line that reruns exactly step `step` of this run.
std::string replay_command(const VerifyOptions& options, int64_t step);

struct VerifyResult {
  DifferentialSummary summary;
  int64_t corrupted_steps = 0;
  double seconds = 0;
};
VerifyResult run_verify(const VerifyOptions& options, std::ostream& progress);

// The summary table: per backend (and the reference) steps, layers, builder calls uncached
// vs cached, mismatches, content errors; then PASS/FAIL.
void print_summary_table(std::ostream& os, const DifferentialSummary& summary, double seconds);

}  // namespace dsv4::harness
