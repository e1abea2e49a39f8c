#include "bench/ttft_sim.h"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"
#include "optimized/step_indexer.h"

namespace dsv4::bench {
namespace {

void cpu_spin_us(double us) {
  const double end = now_us() + us;
  while (now_us() < end) {
  }
}

BusyWaitCalibration calibrate_cpu_spin() {
  BusyWaitCalibration cal;
  for (double requested : {0.0, 10.0, 50.0, 100.0, 500.0, 2000.0}) {
    std::vector<double> samples;
    for (int i = 0; i < 5; ++i) {
      const double t0 = now_us();
      cpu_spin_us(requested);
      samples.push_back(now_us() - t0);
    }
    cal.points.push_back({requested, median(samples)});
  }
  fit_busy_wait_line(cal);
  return cal;
}

struct StepRun {
  double event_us = 0, wall_us = 0;
  int64_t builder_calls = 0, content_errors = 0;
};

StepRun run_step(opt::MixedSparseIndicesBuilder& builder, const StagedStep& s, bool cached,
                 double rest_us, const RestOfLayer& rest, EventTimer* timer, void* stream) {
  StepRun out;
  const double t0 = now_us();
  if (timer != nullptr) timer->start(stream);
  opt::StepIndexer indexer(builder, s.staged->inputs(), opt::CacheOptions{cached, false});
  const std::vector<int32_t>& ratios = s.schedule.compress_ratios;
  for (int32_t l = 0; l < static_cast<int32_t>(ratios.size()); ++l) {
    indexer.layer_indices(ratios[static_cast<size_t>(l)], s.staged->c4a(l));
    rest.run(rest_us);
  }
  if (timer != nullptr) {
    timer->stop(stream);
    out.event_us = timer->elapsed_us();
  }
  out.wall_us = now_us() - t0;
  if (timer == nullptr) out.event_us = out.wall_us;
  out.builder_calls = indexer.cache().builder_calls();
  out.content_errors = indexer.content_errors();
  indexer.end_step();
  return out;
}

// One step of a chunked prefill: `tokens` prompt tokens after `context` earlier ones.
struct ChunkStep {
  int32_t tokens = 0, context = 0;
  bool operator<(const ChunkStep& o) const {
    return context != o.context ? context < o.context : tokens < o.tokens;
  }
};

std::vector<ChunkStep> chunk_steps(int32_t prompt, int32_t chunk) {
  std::vector<ChunkStep> steps;
  for (int32_t done = 0; done < prompt; done += chunk) {
    steps.push_back({std::min(chunk, prompt - done), done});
  }
  return steps;
}

// One distinct step's times per repetition (microseconds).
struct StepTimes {
  std::vector<double> uncached_us, cached_us, uncached_wall_us, cached_wall_us;
};

}  // namespace

RestOfLayer::RestOfLayer(opt::Backend backend, void* stream) : backend_(backend), stream_(stream) {
  calibration_ = backend == opt::Backend::kCuda ? calibrate_busy_wait(stream) : calibrate_cpu_spin();
}

void RestOfLayer::run(double us) const {
  if (us <= 0) return;
  if (backend_ == opt::Backend::kCuda) {
    gpu_busy_wait_us(stream_, calibration_, us);
  } else {
    cpu_spin_us(std::max(0.0, (us - calibration_.offset_us) / calibration_.slope));
  }
}

const char* RestOfLayer::what() const {
  return backend_ == opt::Backend::kCuda ? "busy-wait kernel on the builder's stream (%globaltimer)"
                                         : "CPU spin (steady_clock)";
}

double TtftResult::uncached_median_us() const { return median(uncached_us); }
double TtftResult::cached_median_us() const { return median(cached_us); }
double TtftResult::gain_pct() const {
  const double u = uncached_median_us();
  return u > 0 ? 100.0 * (u - cached_median_us()) / u : 0;
}
double TtftResult::wall_gain_pct() const {
  const double u = median(uncached_wall_us);
  return u > 0 ? 100.0 * (u - median(cached_wall_us)) / u : 0;
}

double estimated_rest_seconds(const TtftConfig& config) {
  std::map<ChunkStep, int> distinct;
  for (int32_t prompt : config.prompts) {
    for (const ChunkStep& c : chunk_steps(prompt, config.chunk_tokens)) distinct[c] = 1;
  }
  double rest_sum_us = 0;
  for (double r : config.rest_us) rest_sum_us += r;
  double layers = 0;
  for (const std::string& model : config.models) layers += model_schedule(model).num_layers();
  return static_cast<double>(distinct.size()) * layers * rest_sum_us * 2.0 * config.reps *
         static_cast<double>(config.background_decodes.size()) * 1e-6;
}

namespace {

// Stages one distinct step and times it for every rest setting and repetition (uncached and
// cached alternating), after one warm-up of each.
std::vector<StepTimes> measure_step(const TtftConfig& config, const ref::ModelSchedule& schedule,
                                    const ChunkStep& chunk, int32_t background,
                                    opt::MixedSparseIndicesBuilder& builder,
                                    const RestOfLayer& rest, EventTimer* timer, void* stream,
                                    const std::function<void(const std::string&)>& progress) {
  harness::StepShape shape;
  shape.num_decodes = background;
  shape.decode_context = config.background_context;
  shape.num_prefills = 1;
  shape.prefill_context = chunk.context;
  shape.prefill_tokens_each = chunk.tokens;
  shape.seed = 1000 + static_cast<uint64_t>(chunk.context) + static_cast<uint64_t>(chunk.tokens);
  const double staging_start = now_us();
  const std::unique_ptr<StagedStep> staged =
      stage_step(config.backend, shape, schedule, /*keep_host=*/false);
  const double measure_start = now_us();
  for (bool cached : {false, true}) run_step(builder, *staged, cached, 0, rest, timer, stream);
  const int64_t calls_uncached = expected_builder_calls(schedule, false);
  const int64_t calls_cached = expected_builder_calls(schedule, true);
  std::vector<StepTimes> times(config.rest_us.size());
  for (size_t i = 0; i < times.size(); ++i) {
    for (int rep = 0; rep < config.reps; ++rep) {
      for (bool cached : {false, true}) {
        const StepRun run =
            run_step(builder, *staged, cached, config.rest_us[i], rest, timer, stream);
        const int64_t expected = cached ? calls_cached : calls_uncached;
        if (run.builder_calls != expected || run.content_errors != 0) {
          std::ostringstream os;
          os << schedule.name << " step of " << chunk.tokens << " tokens after " << chunk.context
             << ": " << run.builder_calls << " builder calls (expected " << expected << "), "
             << run.content_errors << " content errors";
          throw std::runtime_error(os.str());
        }
        (cached ? times[i].cached_us : times[i].uncached_us).push_back(run.event_us);
        (cached ? times[i].cached_wall_us : times[i].uncached_wall_us).push_back(run.wall_us);
      }
    }
  }
  std::ostringstream os;
  os << schedule.name << ": step of " << chunk.tokens << " tokens after " << chunk.context << " (+"
     << background << " decodes) staged in "
     << static_cast<int>((measure_start - staging_start) / 1e3) << " ms, measured in "
     << static_cast<int>((now_us() - measure_start) / 1e3) << " ms";
  progress(os.str());
  return times;
}

// One distinct step of one model with one background setting.
struct StepKey {
  ChunkStep chunk;
  size_t background = 0, model = 0;  // indices into the config's lists
  bool operator<(const StepKey& o) const {
    if (chunk < o.chunk || o.chunk < chunk) return chunk < o.chunk;
    return background != o.background ? background < o.background : model < o.model;
  }
};

}  // namespace

TtftRun simulate_ttft(const TtftConfig& config, const RestOfLayer& rest, void* stream,
                      const std::function<void(const std::string&)>& progress) {
  if (config.chunk_tokens < 1) throw std::invalid_argument("chunk_tokens must be >= 1");
  if (config.reps < 1) throw std::invalid_argument("reps must be >= 1");
  std::unique_ptr<EventTimer> timer;
  if (config.backend == opt::Backend::kCuda) timer = std::make_unique<EventTimer>();
  std::unique_ptr<opt::MixedSparseIndicesBuilder> builder = make_builder(config.backend, stream);
  std::vector<ref::ModelSchedule> schedules;
  for (const std::string& model : config.models) schedules.push_back(model_schedule(model));

  // Every distinct step, shortest context first and every model/background at each context:
  // if the time budget runs out, the short prompts of every model are done.
  std::map<StepKey, std::vector<StepTimes>> measured;
  for (int32_t prompt : config.prompts) {
    for (const ChunkStep& c : chunk_steps(prompt, config.chunk_tokens)) {
      for (size_t b = 0; b < config.background_decodes.size(); ++b) {
        for (size_t m = 0; m < schedules.size(); ++m) measured[StepKey{c, b, m}];
      }
    }
  }
  const double run_start = now_us();
  for (auto& [key, times] : measured) {
    if (config.max_seconds > 0 && (now_us() - run_start) * 1e-6 > config.max_seconds) break;
    times = measure_step(config, schedules[key.model], key.chunk,
                         config.background_decodes[key.background], *builder, rest, timer.get(),
                         stream, progress);
  }

  // TTFT of a prompt = the sum of its steps' times, repetition by repetition.
  TtftRun out;
  const size_t reps = static_cast<size_t>(config.reps);
  for (size_t m = 0; m < schedules.size(); ++m) {
    const ref::ModelSchedule& schedule = schedules[m];
    for (size_t b = 0; b < config.background_decodes.size(); ++b) {
      for (int32_t prompt : config.prompts) {
        const std::vector<ChunkStep> steps = chunk_steps(prompt, config.chunk_tokens);
        bool complete = true;
        for (const ChunkStep& c : steps) complete = complete && !measured[StepKey{c, b, m}].empty();
        if (!complete) {
          out.skipped.push_back(config.models[m] + " prompt " + std::to_string(prompt) + " with " +
                                std::to_string(config.background_decodes[b]) +
                                " background decodes");
          continue;
        }
        for (size_t i = 0; i < config.rest_us.size(); ++i) {
          TtftResult res;
          res.model = config.models[m];
          res.prompt_tokens = prompt;
          res.background_decodes = config.background_decodes[b];
          res.rest_us = config.rest_us[i];
          res.steps = static_cast<int32_t>(steps.size());
          res.layers = schedule.num_layers();
          res.builder_calls_uncached = expected_builder_calls(schedule, false) * res.steps;
          res.builder_calls_cached = expected_builder_calls(schedule, true) * res.steps;
          res.uncached_us.assign(reps, 0);
          res.cached_us = res.uncached_wall_us = res.cached_wall_us = res.uncached_us;
          for (const ChunkStep& c : steps) {
            const StepTimes& t = measured[StepKey{c, b, m}][i];
            for (size_t rep = 0; rep < reps; ++rep) {
              res.uncached_us[rep] += t.uncached_us[rep];
              res.cached_us[rep] += t.cached_us[rep];
              res.uncached_wall_us[rep] += t.uncached_wall_us[rep];
              res.cached_wall_us[rep] += t.cached_wall_us[rep];
            }
          }
          out.results.push_back(std::move(res));
        }
      }
    }
  }
  return out;
}

}  // namespace dsv4::bench
