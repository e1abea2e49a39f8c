#include "harness/verify_run.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <iomanip>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

#include "harness/errors.h"
#include "harness/index_sources.h"

namespace dsv4::harness {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void require_range(const char* option, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max) {
    throw InputError(std::string(option) + " " + std::to_string(value) + ": outside the allowed range " +
                     std::to_string(min) + ".." + std::to_string(max));
  }
}

bool seed_mode_only(const VerifyOptions& o) {
  return o.modes.size() == 1 && o.modes[0] == opt::SharingMode::kSeed;
}

}  // namespace

void validate_verify_options(const VerifyOptions& o) {
  require_range("--steps", o.steps, 0, kMaxVerifySteps);
  if (o.only_step != -1) require_range("--step", o.only_step, 0, kMaxStepIndex);
  require_range("--max-tokens", o.limits.max_tokens, 1, kMaxTokensPerStep);
  require_range("--max-size", o.max_size, 0, kMaxRapidCheckSize);
  require_range("--corrupted-every", o.corrupted_every, 0, kMaxCorruptedEvery);
  if (o.jobs != 0) require_range("--jobs", o.jobs, 1, kMaxJobs);
  if (o.schedules.empty()) throw InputError("--schedule: no schedule chosen");
  if (o.modes.empty()) throw InputError("--mode: no mode chosen");
  if (o.resources.max_step_output_bytes < kMinStepOutputBytes ||
      o.resources.max_step_output_bytes > kMaxStepOutputBytes) {
    throw InputError("--max-step-bytes " + std::to_string(o.resources.max_step_output_bytes) +
                     ": outside the allowed range " + std::to_string(kMinStepOutputBytes) + ".." +
                     std::to_string(kMaxStepOutputBytes));
  }
}

StepPlan plan_step(const VerifyOptions& o, int64_t step) {
  validate_verify_options(o);  // a few compares; max_size + 1 and the moduli below need them
  require_range("step", step, 0, kMaxStepIndex);
  StepPlan plan;
  plan.schedule = o.schedules[static_cast<size_t>(step % static_cast<int64_t>(o.schedules.size()))];
  plan.size = static_cast<int>(step % (o.max_size + 1));
  plan.seed = splitmix64(o.seed ^ splitmix64(static_cast<uint64_t>(step)));
  plan.corrupted = o.corrupted_every > 0 && step % o.corrupted_every == o.corrupted_every - 1;
  return plan;
}

StepCase draw_planned_step(const VerifyOptions& o, const StepPlan& plan) {
  const rc::Gen<StepCase> gen = plan.corrupted ? gen_corrupted_step_case(plan.schedule, o.limits)
                                               : gen_step_case(plan.schedule, o.limits);
  StepCase c = draw(gen, plan.seed, plan.size);
  // SPEC §8 modes: index sources from a seed of their own (the step is the seed mode's).
  if (!seed_mode_only(o)) c = draw(gen_index_sources(std::move(c)), splitmix64(plan.seed), plan.size);
  return c;
}

std::string replay_command(const VerifyOptions& o, int64_t step) {
  const VerifyOptions defaults;
  std::ostringstream os;
  os << "dsv4 verify --seed " << o.seed << " --schedule " << o.schedule_arg << " --backend "
     << o.backend_arg << " --max-tokens " << o.limits.max_tokens;
  if (o.mode_arg != defaults.mode_arg) os << " --mode " << o.mode_arg;
  if (o.max_size != defaults.max_size) os << " --max-size " << o.max_size;
  if (o.corrupted_every != defaults.corrupted_every) os << " --corrupted-every " << o.corrupted_every;
  if (o.resources.max_step_output_bytes != defaults.resources.max_step_output_bytes) {
    os << " --max-step-bytes " << o.resources.max_step_output_bytes;
  }
  os << " --step " << step;
  return os.str();
}

VerifyResult run_verify(const VerifyOptions& o, std::ostream& progress) {
  validate_verify_options(o);
  const auto start = std::chrono::steady_clock::now();
  // In range: only_step <= 10^18 and steps <= 10^12, so neither bound overflows.
  const int64_t first = o.only_step >= 0 ? o.only_step : 0;
  const int64_t last = o.only_step >= 0 ? o.only_step + 1 : o.steps;
  const int64_t total = last - first;
  const int64_t cores = std::max<int64_t>(std::thread::hardware_concurrency(), 1);
  const int jobs = static_cast<int>(std::clamp<int64_t>(o.jobs > 0 ? o.jobs : cores, 1, std::max<int64_t>(total, 1)));

  std::atomic<int64_t> next{first}, done{0}, mismatches{0}, corrupted{0};
  std::mutex generation_mutex;  // RapidCheck's generation context is process-global
  std::mutex result_mutex;
  DifferentialSummary totals;
  std::vector<std::pair<int64_t, DifferentialSummary>> failing;
  std::exception_ptr fatal;
  std::atomic<bool> failed{false};

  // Workers wait until every thread was started (or one could not be), then those with an
  // index at or above `active` leave without allocating anything: when a thread cannot start,
  // memory is short, so half of those that did start, at most one per core, do the run.
  std::atomic<int> active{jobs};
  std::mutex start_mutex;
  std::condition_variable start_signal;
  bool started = false;
  auto worker = [&](int index) {
    {
      std::unique_lock<std::mutex> lock(start_mutex);
      start_signal.wait(lock, [&] { return started; });
    }
    if (index >= active.load()) return;
    try {
      DifferentialOptions options;
      options.backends = o.backends;
      options.make_builder = o.make_builder;
      options.modes = o.modes;
      options.one_launch = !seed_mode_only(o);
      DifferentialChecker checker(options);
      DifferentialSummary local;
      for (int64_t i = next++; i < last; i = next++) {
        const StepPlan plan = plan_step(o, i);
        StepCase c;
        {
          std::lock_guard<std::mutex> lock(generation_mutex);
          c = draw_planned_step(o, plan);
        }
        check_step_resources(c.step, c.schedule, c.c4a_per_layer, o.resources,
                             "verify step " + std::to_string(i) + " (" + replay_command(o, i) + ")");
        const DifferentialSummary s =
            checker.check(c, plan.corrupted ? ContentErrorPolicy::kMustMatch : ContentErrorPolicy::kMustBeZero,
                          replay_command(o, i));
        if (s.ok()) {
          local.add(s);
        } else {
          std::lock_guard<std::mutex> lock(result_mutex);
          failing.emplace_back(i, s);
          mismatches += s.mismatches();
        }
        if (plan.corrupted) ++corrupted;
        ++done;
      }
      std::lock_guard<std::mutex> lock(result_mutex);
      totals.add(local);
    } catch (...) {
      std::lock_guard<std::mutex> lock(result_mutex);
      if (!fatal) fatal = std::current_exception();
      failed = true;
      next = last;  // stop the others
    }
  };
  // A thread that cannot start (no memory for its stack, a process limit) leaves the run to
  // half of the ones that did; with none, the calling thread does the work after the
  // progress loop.
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(jobs));
  for (int j = 0; j < jobs; ++j) {
    try {
      threads.emplace_back(worker, j);
    } catch (const std::exception& e) {  // std::system_error; std::bad_alloc for its state
      active = static_cast<int>(std::clamp<int64_t>(j / 2, 1, cores));
      progress << "verify: could start only " << j << " of " << jobs << " worker threads (" << e.what()
               << "); memory is short, running with " << active.load() << "\n"
               << std::flush;
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(start_mutex);
    started = true;
  }
  start_signal.notify_all();
  // The surplus threads leave at once; joined now, their stacks are released for the others.
  for (size_t t = static_cast<size_t>(active.load()); t < threads.size(); ++t) threads[t].join();
  if (threads.size() > static_cast<size_t>(active.load())) threads.resize(static_cast<size_t>(active.load()));

  // Progress: a live line on a terminal, a line per tenth otherwise.
  const bool tty = isatty(STDERR_FILENO) != 0;
  int64_t last_tenth = 0;
  auto show = [&](bool final_line) {
    const int64_t d = done.load();
    const double elapsed = seconds_since(start);
    std::ostringstream line;
    line << "verify: " << d << "/" << total << " steps, " << mismatches.load() << " mismatches, "
         << std::fixed << std::setprecision(1) << elapsed << " s";
    if (d > 0 && d < total) line << ", ~" << elapsed * static_cast<double>(total - d) / static_cast<double>(d) << " s left";
    if (tty) {
      progress << "\r" << line.str() << "    " << (final_line ? "\n" : "") << std::flush;
    } else if (total > 0 && (d * 10 / total > last_tenth || final_line)) {
      last_tenth = d * 10 / total;
      progress << line.str() << "\n" << std::flush;
    }
  };
  if (o.progress && !threads.empty()) {
    while (done.load() < total && !failed.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (done.load() < total) show(false);
    }
  }
  if (threads.empty()) worker(0);
  for (std::thread& t : threads) t.join();
  if (fatal) std::rethrow_exception(fatal);
  if (o.progress && total > 0 && (tty || last_tenth < 10)) show(true);

  std::sort(failing.begin(), failing.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& f : failing) totals.add(f.second);
  VerifyResult result;
  result.summary = totals;
  result.corrupted_steps = corrupted.load();
  result.seconds = seconds_since(start);
  return result;
}

void print_summary_table(std::ostream& os, const DifferentialSummary& s, double seconds, const std::string& result) {
  auto row = [&os](const std::string& backend, const std::string& steps, const std::string& layers,
                   const std::string& uncached, const std::string& cached,
                   const std::string& mismatches, const std::string& errors) {
    os << "  " << std::left << std::setw(10) << backend << std::right << std::setw(8) << steps
       << std::setw(10) << layers << std::setw(17) << uncached << std::setw(17) << cached
       << std::setw(12) << mismatches << std::setw(16) << errors << "\n";
  };
  row("backend", "steps", "layers", "calls uncached", "calls cached", "mismatches", "content errors");
  const auto n = [](int64_t v) { return std::to_string(v); };
  row("reference", n(s.steps), n(s.layers), n(s.layers), "-", n(s.reference_mismatches),
      n(s.reference_content_errors));
  for (const BackendTotals& b : s.backends) {
    std::string cached = n(b.calls_cached);
    if (b.calls_uncached > 0) {
      const double saved = 100.0 * static_cast<double>(b.calls_uncached - b.calls_cached) /
                           static_cast<double>(b.calls_uncached);
      std::ostringstream pct;
      pct << " (-" << std::fixed << std::setprecision(0) << saved << "%)";
      cached += pct.str();
    }
    row(b.backend, n(b.steps), n(b.layers), n(b.calls_uncached), cached, n(b.mismatches),
        n(b.content_errors));
  }
  // SPEC §7 engine layouts: how many steps used them, and the graph path's builds per backend.
  os << "  SPEC §7: " << s.engine.graph << " of " << s.steps
     << " steps also in persistent buffers, recorded as a step graph and replayed with run-time sizes (builds:";
  for (const BackendTotals& b : s.backends) {
    // The graph path runs in the seed and split modes; tail-only ("host tail") has none.
    if (b.mode != opt::SharingMode::kTailOnly) os << " " << b.backend << " " << b.calls_graph;
  }
  os << "); " << s.engine.spans_offsets << " with block spans or base offsets; " << s.engine.persistent_tables
     << " with block tables past R or strided\n";
  os << "  result: " << (!result.empty() ? result : s.ok() ? "PASS" : "FAIL") << ", " << s.mismatches() << " mismatch(es) in "
     << s.steps << " steps, " << std::fixed << std::setprecision(1) << seconds << " s\n";
}

}  // namespace dsv4::harness
