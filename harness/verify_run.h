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
#include "harness/resource_limits.h"

namespace dsv4::harness {

// The documented range of every option (`dsv4 verify --help` prints them; the command line
// and run_verify both enforce them).
constexpr int64_t kMaxVerifySteps = 1000000000000;           // --steps 0..10^12
constexpr int64_t kMaxStepIndex = 1000000000000000000;       // --step 0..10^18
constexpr int32_t kMaxTokensPerStep = 8192;                  // --max-tokens 1..8192
constexpr int kMaxRapidCheckSize = 100;                      // --max-size 0..100
constexpr int kMaxJobs = 1024;                               // --jobs 1..1024
constexpr int kMaxCorruptedEvery = 2147483647;               // --corrupted-every 0..2^31-1

struct VerifyOptions {
  int64_t steps = 500;
  uint64_t seed = 1;
  std::vector<ScheduleChoice> schedules{ScheduleChoice::kFlash, ScheduleChoice::kPro,
                                        ScheduleChoice::kRandom};  // step i uses i % size
  std::string schedule_arg = "all";    // as given on the command line (for replay lines)
  std::string backend_arg = "all";
  std::vector<opt::Backend> backends;  // empty: every backend present
  // SPEC §8 sharing modes checked on every step (seed: SPEC §5's uncached and cached paths).
  // Any other mode also draws index sources for the C4A layers of each step and checks every
  // mode's path with its cacheable builds in one launch as well.
  std::vector<opt::SharingMode> modes{opt::SharingMode::kSeed};
  std::string mode_arg = "seed";
  StepLimits limits{256, 16, 20000, 0};
  int max_size = 100;                  // RapidCheck size of step i: i % (max_size + 1)
  int corrupted_every = 10;            // every k-th step is a corrupted step; 0: none
  int64_t only_step = -1;              // >= 0: run just this step (to replay a failure)
  int jobs = 0;                        // worker threads; 0: hardware concurrency
  bool progress = true;
  ResourceLimits resources;            // every generated step is checked against them
  BuilderFactory make_builder;         // null: the real builders (tests inject faulty ones)
};

// Throws InputError naming the option and its allowed range when an option is outside it.
void validate_verify_options(const VerifyOptions& options);

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
// Validates the options first. A worker thread that cannot be started is reported on
// `progress` and the run continues on half of those that did start, at most one per core
// (on the calling thread if none started).
// A generated step past options.resources throws InputError naming the step.
VerifyResult run_verify(const VerifyOptions& options, std::ostream& progress);

// The summary table: per backend (and the reference) steps, layers, builder calls uncached
// vs cached, mismatches, content errors; a line on the SPEC §7 engine layouts (steps taking
// the graph path and its builds per backend, steps with spans or offsets, with persistent
// tables); then the result: PASS/FAIL, or `result` if given.
void print_summary_table(std::ostream& os, const DifferentialSummary& summary, double seconds,
                         const std::string& result = "");

}  // namespace dsv4::harness
