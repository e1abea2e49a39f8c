// The TTFT simulation (issues 5, 12): chunked prefill of one prompt through a whole model
// schedule, uncached and cached in each SPEC §8 sharing mode (bench/step_variant.h), each layer
// = its index lookup/build (one StepIndexer per step) + a fixed "rest of the
// layer" played by a stand-in of calibrated duration on the same stream: a busy-wait kernel
// (touches no memory: the builder's inputs stay in L2 between layers, which flatters both
// paths) or a streaming kernel of the same duration that reads and writes >= 2 x L2 (the
// L2 is evicted between layers, as a real attention + MoE would). The host backend has CPU
// versions of both (a spin, a streaming loop).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/gpu_timing.h"
#include "bench/step_variant.h"
#include "optimized/builder.h"

namespace dsv4::bench {

// What stands in for the rest of a layer. kNone: rest 0, nothing runs (the upper bound).
enum class StandIn { kNone, kBusyWait, kStreaming };
const char* stand_in_name(StandIn stand_in);  // "none", "busy-wait", "streaming"
StandIn stand_in_from_name(const std::string& name);  // "busy-wait" | "streaming"; else throws

struct TtftConfig {
  opt::Backend backend = opt::Backend::kHost;
  std::vector<std::string> models = {"flash", "pro"};
  std::vector<int32_t> prompts = {1024, 8192, 32768, 131072};  // tokens
  int32_t chunk_tokens = 8192;                                 // prefill tokens per step
  std::vector<int32_t> background_decodes = {0};  // decode requests added to every step
  int32_t background_context = 8192;               // their seq_len
  std::vector<double> rest_us = {0, 100, 500, 2000};  // rest of each layer
  // Every rest_us > 0 is measured with each of these (rest 0 once, with no stand-in).
  std::vector<StandIn> stand_ins = {StandIn::kBusyWait, StandIn::kStreaming};
  // The cached variants measured beside the uncached step (mode_name(): seed, split, tail, ...).
  std::vector<StepVariant> modes = {{true, opt::SharingMode::kSeed},
                                    {true, opt::SharingMode::kSplit},
                                    {true, opt::SharingMode::kTailOnly}};
  int reps = 3;
  double max_seconds = 0;  // > 0: stage no new step after this long; unfinished prompts are skipped
  // Check every distinct step's outputs in every mode against the reference (untimed, before
  // the step is timed): harness/sharing_check.h.
  bool verify = false;
};

// One measured setting of a step: a rest duration and what plays it.
struct RestSetting {
  double rest_us = 0;
  StandIn stand_in = StandIn::kNone;
};
// The settings of `config` in report order: rest 0 once (kNone), then each rest_us > 0 with
// each stand-in, in the order given.
std::vector<RestSetting> rest_settings(const TtftConfig& config);

// One calibrated stand-in.
struct StandInInfo {
  StandIn stand_in = StandIn::kNone;
  std::string what;  // one line: what runs, on what, how long it can be
  DurationCalibration calibration;
  // Streaming only: the buffer streamed each pass, the cache it is sized against (the GPU's
  // L2, the CPU's last-level cache) and whether the buffer is >= 2 x that cache.
  int64_t buffer_bytes = 0, cache_bytes = 0;
  bool evicts_cache = false;
};

// Stands in for everything a layer does besides its indices.
class RestOfLayer {
 public:
  // Calibrates each of `stand_ins`: CUDA kernels on `stream`, or their CPU versions.
  RestOfLayer(opt::Backend backend, void* stream, const std::vector<StandIn>& stand_ins);
  ~RestOfLayer();
  RestOfLayer(const RestOfLayer&) = delete;
  RestOfLayer& operator=(const RestOfLayer&) = delete;
  // Enqueues (CUDA) or runs (host) `stand_in` for `us`; nothing for us <= 0 or kNone.
  void run(StandIn stand_in, double us) const;
  // Median measured duration of run(stand_in, us) over `samples` (CUDA events or wall clock).
  double measure_us(StandIn stand_in, double us, int samples) const;
  const StandInInfo& info(StandIn stand_in) const;  // throws if it was not calibrated
  const std::vector<StandInInfo>& stand_ins() const { return infos_; }

 private:
  opt::Backend backend_;
  void* stream_;
  std::vector<StandInInfo> infos_;
  std::unique_ptr<StreamingWait> gpu_streaming_;  // CUDA streaming stand-in
  mutable std::vector<uint64_t> host_buffer_;      // host streaming stand-in
};

// The stand-ins' measured durations for one requested rest, side by side, so a reader can
// see that they match.
struct StandInCheck {
  double requested_us = 0;
  std::vector<StandIn> stand_ins;
  std::vector<double> measured_us;  // per stand-in, median of the samples
};
// One check per rest_us > 0 of `config`, each stand-in measured `samples` times.
std::vector<StandInCheck> check_stand_ins(const TtftConfig& config, const RestOfLayer& rest,
                                          int samples);

// One cached variant's TTFT in one setting.
struct ModeTtft {
  StepVariant variant;
  int64_t builder_calls = 0, launches = 0;  // summed over the steps
  // Per repetition, summed over the steps (as TtftResult's uncached times).
  std::vector<double> cached_us, cached_wall_us;
  double median_us() const;
  double wall_median_us() const;
};

// (base - us) / base in percent; 0 when base <= 0.
double saved_pct(double base_us, double us);

struct TtftResult {
  std::string model;
  int32_t prompt_tokens = 0, background_decodes = 0;
  double rest_us = 0;
  StandIn stand_in = StandIn::kNone;
  int32_t steps = 0, layers = 0;
  int64_t builder_calls_uncached = 0;  // summed over the steps
  // Per repetition, summed over the steps: event time from each step's start to its end
  // (host wall time on the host backend), and host wall time including the final sync.
  std::vector<double> uncached_us, uncached_wall_us;
  std::vector<ModeTtft> modes;  // the config's modes, in order

  double uncached_median_us() const;
  double gain_pct(size_t mode) const;       // saved_pct(uncached, the mode's cached) of the medians
  double wall_gain_pct(size_t mode) const;  // same for wall time
};

struct TtftRun {
  std::vector<TtftResult> results;
  std::vector<std::string> skipped;  // prompts left out by the time budget
  double measure_seconds = 0;        // staging + measuring (+ verifying), what --max-seconds limits
  int64_t verified_steps = 0;        // distinct steps x modes checked against the reference
};

// The variants timed per repetition: the uncached step, then each of config.modes.
std::vector<StepVariant> timed_variants(const TtftConfig& config);

// One measured step: a StepIndexer in v's mode and caching on `s`, each layer followed by the
// setting's stand-in; event time from `timer` (null: the wall time) and the step's counts.
struct StepRun {
  double event_us = 0, wall_us = 0;
  StepCounts counts;
};
StepRun run_measured_step(opt::MixedSparseIndicesBuilder& builder, const StagedStep& s, const StepVariant& v,
                          const RestSetting& setting, const RestOfLayer& rest, EventTimer* timer, void* stream);

// Runs every (model, background, prompt, rest setting) of `config`: per repetition the
// uncached step, then each mode's cached step. A prompt of P tokens is ceil(P / chunk) steps;
// the prompts share their common steps (same shape, same seed: the same step), each distinct
// step is staged once (outside the timed region) and timed for every rest setting, mode and
// repetition, and a prompt's TTFT is the sum of its steps' times, repetition by repetition.
// Every setting of a step is measured before the next step is staged, so when the time budget
// runs out a prompt is skipped for every stand-in and mode alike, never measured with one and
// not the other. Throws std::runtime_error on content errors, builds or launches other than
// SPEC §5/§8's, or (verify) any output that differs from the reference's.
TtftRun simulate_ttft(const TtftConfig& config, const RestOfLayer& rest, void* stream,
                      const std::function<void(const std::string&)>& progress);

// Seconds the runs' stand-ins alone take (a lower bound of the run time): each setting's
// rest, or the stand-in's shortest duration where that is longer (one streaming pass), for the
// uncached step and each mode.
double estimated_rest_seconds(const TtftConfig& config, const RestOfLayer& rest);

}  // namespace dsv4::bench
