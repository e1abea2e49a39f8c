// The TTFT simulation (issue 5): chunked prefill of one prompt through a whole model schedule,
// each layer = its index lookup/build (one StepIndexer per step) + a fixed "rest of the
// layer" (a calibrated busy-wait on the same stream; a CPU spin on the host backend).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/gpu_timing.h"
#include "optimized/builder.h"

namespace dsv4::bench {

struct TtftConfig {
  opt::Backend backend = opt::Backend::kHost;
  std::vector<std::string> models = {"flash", "pro"};
  std::vector<int32_t> prompts = {1024, 8192, 32768, 131072};  // tokens
  int32_t chunk_tokens = 8192;                                 // prefill tokens per step
  std::vector<int32_t> background_decodes = {0};  // decode requests added to every step
  int32_t background_context = 8192;               // their seq_len
  std::vector<double> rest_us = {0, 100, 500, 2000};  // rest of each layer
  int reps = 3;
  double max_seconds = 0;  // > 0: stage no new step after this long; unfinished prompts are skipped
};

// Stands in for everything a layer does besides its indices.
class RestOfLayer {
 public:
  // CUDA: calibrates the busy-wait kernel on `stream`; host: calibrates a CPU spin.
  RestOfLayer(opt::Backend backend, void* stream);
  void run(double us) const;  // enqueues (CUDA) or spins (host); nothing for us <= 0
  const BusyWaitCalibration& calibration() const { return calibration_; }
  const char* what() const;  // "busy-wait kernel (%globaltimer)" or "CPU spin"

 private:
  opt::Backend backend_;
  void* stream_;
  BusyWaitCalibration calibration_;
};

struct TtftResult {
  std::string model;
  int32_t prompt_tokens = 0, background_decodes = 0;
  double rest_us = 0;
  int32_t steps = 0, layers = 0;
  int64_t builder_calls_uncached = 0, builder_calls_cached = 0;  // summed over the steps
  // Per repetition, summed over the steps: event time from each step's start to its end
  // (host wall time on the host backend), and host wall time including the final sync.
  std::vector<double> uncached_us, cached_us, uncached_wall_us, cached_wall_us;

  double uncached_median_us() const;
  double cached_median_us() const;
  double gain_pct() const;       // (uncached - cached) / uncached of the medians
  double wall_gain_pct() const;  // same for wall time
};

struct TtftRun {
  std::vector<TtftResult> results;
  std::vector<std::string> skipped;  // prompts left out by the time budget
};

// Runs every (model, background, prompt, rest) of `config`, uncached and cached alternating.
// A prompt of P tokens is ceil(P / chunk) steps; the prompts share their common steps (same
// shape, same seed: the same step), each distinct step is staged once (outside the timed
// region) and timed for every rest setting and repetition, and a prompt's TTFT is the sum of
// its steps' times, repetition by repetition. Throws std::runtime_error on content errors or
// wrong builder-call counts.
TtftRun simulate_ttft(const TtftConfig& config, const RestOfLayer& rest, void* stream,
                      const std::function<void(const std::string&)>& progress);

// Seconds the runs' busy-waits alone take (a lower bound of the run time).
double estimated_rest_seconds(const TtftConfig& config);

}  // namespace dsv4::bench
