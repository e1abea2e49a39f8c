#include "bench/ttft_sim.h"

#include <algorithm>
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

// Least-squares line measured = offset + slope * requested over the points of 10 us and up.
void fit(BusyWaitCalibration& cal) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : cal.points) {
    if (p.requested_us < 10.0) continue;
    n += 1;
    sx += p.requested_us;
    sy += p.measured_us;
    sxx += p.requested_us * p.requested_us;
    sxy += p.requested_us * p.measured_us;
  }
  const double den = n * sxx - sx * sx;
  if (den <= 0) return;
  const double slope = (n * sxy - sx * sy) / den;
  if (slope > 0.5 && slope < 2.0) {
    cal.slope = slope;
    cal.offset_us = (sy - slope * sx) / n;
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
  fit(cal);
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

double ceil_div(double a, double b) { return (a + b - 1) / b; }

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
  double us = 0;
  for (const std::string& model : config.models) {
    const double layers = model_schedule(model).num_layers();
    for (int32_t prompt : config.prompts) {
      const double steps = ceil_div(prompt, config.chunk_tokens);
      for (double rest : config.rest_us) {
        us += steps * layers * rest * 2.0 * config.reps *
              static_cast<double>(config.background_decodes.size());
      }
    }
  }
  return us * 1e-6;
}

std::vector<TtftResult> simulate_ttft(const TtftConfig& config, const RestOfLayer& rest,
                                      void* stream,
                                      const std::function<void(const std::string&)>& progress) {
  if (config.chunk_tokens < 1) throw std::invalid_argument("chunk_tokens must be >= 1");
  if (config.reps < 1) throw std::invalid_argument("reps must be >= 1");
  const bool cuda = config.backend == opt::Backend::kCuda;
  std::unique_ptr<EventTimer> timer;
  if (cuda) timer = std::make_unique<EventTimer>();
  std::unique_ptr<opt::MixedSparseIndicesBuilder> builder = make_builder(config.backend, stream);

  std::vector<TtftResult> results;
  for (const std::string& model : config.models) {
    const ref::ModelSchedule schedule = model_schedule(model);
    const int64_t calls_uncached = expected_builder_calls(schedule, false);
    const int64_t calls_cached = expected_builder_calls(schedule, true);
    for (int32_t prompt : config.prompts) {
      if (prompt < 1) throw std::invalid_argument("prompt length must be >= 1");
      for (int32_t background : config.background_decodes) {
        const double started = now_us();
        const int32_t steps = (prompt + config.chunk_tokens - 1) / config.chunk_tokens;
        const size_t first = results.size();
        for (double r : config.rest_us) {
          TtftResult res;
          res.model = model;
          res.prompt_tokens = prompt;
          res.background_decodes = background;
          res.rest_us = r;
          res.steps = steps;
          res.layers = schedule.num_layers();
          res.uncached_us.assign(static_cast<size_t>(config.reps), 0);
          res.cached_us = res.uncached_wall_us = res.cached_wall_us = res.uncached_us;
          results.push_back(res);
        }
        for (int32_t step = 0; step < steps; ++step) {
          harness::StepShape shape;
          shape.num_decodes = background;
          shape.decode_context = config.background_context;
          shape.num_prefills = 1;
          shape.prefill_context = step * config.chunk_tokens;
          shape.prefill_tokens_each = std::min(config.chunk_tokens, prompt - shape.prefill_context);
          shape.seed = 1000 + static_cast<uint64_t>(step);
          const std::unique_ptr<StagedStep> staged =
              stage_step(config.backend, shape, schedule, /*keep_host=*/false);
          for (bool cached : {false, true}) {  // warm-up: workspace grown, code loaded
            run_step(*builder, *staged, cached, 0, rest, timer.get(), stream);
          }
          for (size_t i = first; i < results.size(); ++i) {
            TtftResult& res = results[i];
            for (int rep = 0; rep < config.reps; ++rep) {
              for (bool cached : {false, true}) {
                const StepRun run = run_step(*builder, *staged, cached, res.rest_us, rest,
                                             timer.get(), stream);
                const int64_t expected = cached ? calls_cached : calls_uncached;
                if (run.builder_calls != expected || run.content_errors != 0) {
                  std::ostringstream os;
                  os << model << " prompt " << prompt << " step " << step << ": "
                     << run.builder_calls << " builder calls (expected " << expected << "), "
                     << run.content_errors << " content errors";
                  throw std::runtime_error(os.str());
                }
                const size_t k = static_cast<size_t>(rep);
                (cached ? res.cached_us : res.uncached_us)[k] += run.event_us;
                (cached ? res.cached_wall_us : res.uncached_wall_us)[k] += run.wall_us;
              }
            }
          }
        }
        for (size_t i = first; i < results.size(); ++i) {
          results[i].builder_calls_uncached = calls_uncached * steps;
          results[i].builder_calls_cached = calls_cached * steps;
        }
        std::ostringstream os;
        os << model << " prompt " << prompt << " (" << steps << " steps, " << background
           << " background decodes): done in " << static_cast<int>((now_us() - started) / 1e3)
           << " ms";
        progress(os.str());
      }
    }
  }
  return results;
}

}  // namespace dsv4::bench
