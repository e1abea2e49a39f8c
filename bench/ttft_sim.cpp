#include "bench/ttft_sim.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"
#include "harness/counting_builder.h"
#include "harness/sharing_check.h"
#include "harness/step_case.h"
#include "optimized/step_indexer.h"

namespace dsv4::bench {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// The CPU streaming loop's buffer is 2 x the last-level cache, but at most this: the host
// backend is a smoke test, and one thread streaming 2 x a server's LLC (hundreds of MiB)
// would take ~0.1 s per layer (64 MiB took ~10 ms a pass here, and --quick times each step
// uncached and in 3 modes). Where the cap binds, the stand-in says it does not evict.
constexpr int64_t kHostStreamMaxBytes = 32 * kMiB;
constexpr int64_t kHostStreamMinBytes = 16 * kMiB;

void cpu_spin_us(double us) {
  const double end = now_us() + us;
  while (now_us() < end) {
  }
}

// One full read+write pass over the buffer, then on around it until `us` have passed.
void cpu_stream_us(std::vector<uint64_t>& buffer, double us) {
  const double end = now_us() + us;
  uint64_t* p = buffer.data();
  const size_t n = buffer.size();
  for (size_t i = 0; i < n; ++i) p[i] += 1;
  size_t i = 0;
  while (now_us() < end) {
    const size_t stop = std::min(n, i + 4096);  // 32 KiB between clock reads
    for (; i < stop; ++i) p[i] += 1;
    if (i == n) i = 0;
  }
}

// The size of cpu0's highest-level data/unified cache (sysfs, else sysconf); 0 when unknown.
int64_t host_last_level_cache_bytes() {
  int64_t best = 0;
  int best_level = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) break;
    if (type == "Instruction" || size.empty()) continue;
    int64_t bytes = 0;
    try {
      bytes = std::stoll(size);
    } catch (const std::exception&) {
      continue;
    }
    const char unit = size.back();
    if (unit == 'K') bytes *= 1024;
    if (unit == 'M') bytes *= kMiB;
    if (unit == 'G') bytes *= 1024 * kMiB;
    if (level > best_level || (level == best_level && bytes > best)) {
      best_level = level;
      best = bytes;
    }
  }
  if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return l2;
#endif
  return 0;
}

std::string mib(int64_t bytes) {
  std::ostringstream os;
  os << static_cast<double>(bytes) / static_cast<double>(kMiB) << " MiB";
  return os.str();
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

// One distinct step's times per repetition (microseconds); cached: per mode of the config.
struct StepTimes {
  std::vector<double> uncached_us, uncached_wall_us;
  std::vector<std::vector<double>> cached_us, cached_wall_us;
};

}  // namespace

const char* stand_in_name(StandIn stand_in) {
  switch (stand_in) {
    case StandIn::kNone:
      return "none";
    case StandIn::kBusyWait:
      return "busy-wait";
    case StandIn::kStreaming:
      return "streaming";
  }
  return "?";
}

StandIn stand_in_from_name(const std::string& name) {
  if (name == "busy-wait") return StandIn::kBusyWait;
  if (name == "streaming") return StandIn::kStreaming;
  throw std::invalid_argument("unknown stand-in '" + name + "' (busy-wait, streaming)");
}

std::vector<RestSetting> rest_settings(const TtftConfig& config) {
  std::vector<RestSetting> out;
  bool zero = false;
  for (double us : config.rest_us) {
    if (us <= 0) {
      if (!zero) out.push_back({0.0, StandIn::kNone});
      zero = true;
      continue;
    }
    for (StandIn s : config.stand_ins) {
      if (s != StandIn::kNone) out.push_back({us, s});
    }
  }
  return out;
}

RestOfLayer::RestOfLayer(opt::Backend backend, void* stream, const std::vector<StandIn>& stand_ins)
    : backend_(backend), stream_(stream) {
  const bool cuda = backend == opt::Backend::kCuda;
  for (StandIn s : stand_ins) {
    if (s == StandIn::kNone) continue;
    bool seen = false;
    for (const StandInInfo& i : infos_) seen = seen || i.stand_in == s;
    if (seen) continue;
    StandInInfo info;
    info.stand_in = s;
    if (s == StandIn::kBusyWait) {
      if (cuda) {
        info.what = "busy-wait kernel on the builder's stream (1 thread, %globaltimer; touches "
                    "no memory)";
        info.calibration = calibrate_busy_wait(stream);
      } else {
        info.what = "CPU spin (steady_clock; touches no memory)";
        info.calibration = calibrate_durations(busy_wait_calibration_points(), 5, [](double us) {
          const double t0 = now_us();
          cpu_spin_us(us);
          return now_us() - t0;
        });
      }
    } else if (cuda) {
      gpu_streaming_ = std::make_unique<StreamingWait>();
      info.buffer_bytes = static_cast<int64_t>(gpu_streaming_->bytes());
      info.cache_bytes = gpu_streaming_->l2_bytes();
      info.evicts_cache = info.buffer_bytes >= 2 * info.cache_bytes;
      info.what = "streaming kernel on the builder's stream (" +
                  std::to_string(gpu_streaming_->blocks()) + " CTAs x " +
                  std::to_string(gpu_streaming_->threads()) + " threads): reads and writes " +
                  mib(info.buffer_bytes) + " (>= 2 x the " + mib(info.cache_bytes) +
                  " L2) per pass, one full pass at least, then on until %globaltimer says done";
      info.calibration = calibrate_streaming_wait(*gpu_streaming_, stream);
    } else {
      const int64_t llc = host_last_level_cache_bytes();
      const int64_t assumed = llc > 0 ? llc : 32 * kMiB;
      const int64_t bytes =
          std::min(kHostStreamMaxBytes, std::max(kHostStreamMinBytes, 2 * assumed));
      host_buffer_.assign(static_cast<size_t>(bytes) / sizeof(uint64_t), 0x5a5a5a5a5a5a5a5aull);
      info.buffer_bytes = bytes;
      info.cache_bytes = assumed;
      info.evicts_cache = bytes >= 2 * assumed;
      info.what = "CPU streaming loop (one thread, read+write) over " + mib(bytes) +
                  ", one full pass at least; LLC " +
                  (llc > 0 ? mib(llc) : std::string("unknown (assumed 32 MiB)")) +
                  (info.evicts_cache ? std::string(", so >= 2 x LLC")
                                     : ": 2 x LLC capped at " + mib(kHostStreamMaxBytes) +
                                           " for the smoke test, so it does NOT evict the LLC");
      info.calibration =
          calibrate_durations(streaming_calibration_points(), 5, [this](double us) {
            const double t0 = now_us();
            cpu_stream_us(host_buffer_, us);
            return now_us() - t0;
          });
    }
    if (!info.calibration.fit_plausible) {
      std::fprintf(stderr, "warning: %s stand-in: implausible calibration slope; using 1.0\n",
                   stand_in_name(s));
    }
    infos_.push_back(std::move(info));
  }
}

RestOfLayer::~RestOfLayer() = default;

const StandInInfo& RestOfLayer::info(StandIn stand_in) const {
  for (const StandInInfo& i : infos_) {
    if (i.stand_in == stand_in) return i;
  }
  throw std::invalid_argument(std::string("RestOfLayer: stand-in ") + stand_in_name(stand_in) +
                              " was not calibrated");
}

void RestOfLayer::run(StandIn stand_in, double us) const {
  if (us <= 0 || stand_in == StandIn::kNone) return;
  const DurationCalibration& cal = info(stand_in).calibration;
  const bool cuda = backend_ == opt::Backend::kCuda;
  if (stand_in == StandIn::kBusyWait) {
    if (cuda) {
      gpu_busy_wait_us(stream_, cal, us);
    } else {
      cpu_spin_us(cal.request_for(us));
    }
  } else if (cuda) {
    gpu_streaming_wait_us(stream_, *gpu_streaming_, cal, us);
  } else {
    cpu_stream_us(host_buffer_, cal.request_for(us));
  }
}

double RestOfLayer::measure_us(StandIn stand_in, double us, int samples) const {
  if (backend_ == opt::Backend::kCuda) {
    return measure_on_stream_us(stream_, samples, [&] { run(stand_in, us); });
  }
  std::vector<double> wall;
  for (int i = 0; i < samples; ++i) {
    const double t0 = now_us();
    run(stand_in, us);
    wall.push_back(now_us() - t0);
  }
  return median(wall);
}

std::vector<StandInCheck> check_stand_ins(const TtftConfig& config, const RestOfLayer& rest,
                                          int samples) {
  std::vector<StandInCheck> out;
  for (double us : config.rest_us) {
    if (us <= 0) continue;
    StandInCheck check;
    check.requested_us = us;
    for (const StandInInfo& i : rest.stand_ins()) {
      check.stand_ins.push_back(i.stand_in);
      check.measured_us.push_back(rest.measure_us(i.stand_in, us, samples));
    }
    out.push_back(std::move(check));
  }
  return out;
}

StepRun run_measured_step(opt::MixedSparseIndicesBuilder& builder, const StagedStep& s, const StepVariant& v,
                          const RestSetting& setting, const RestOfLayer& rest, EventTimer* timer, void* stream) {
  StepRun out;
  const double t0 = now_us();
  if (timer != nullptr) timer->start(stream);
  opt::StepIndexer indexer(builder, s.staged->inputs(), opt::CacheOptions{v.cached, false}, v.mode);
  index_every_layer(indexer, s, v, [&] { rest.run(setting.stand_in, setting.rest_us); });
  if (timer != nullptr) {
    timer->stop(stream);
    out.event_us = timer->elapsed_us();
  }
  out.wall_us = now_us() - t0;
  if (timer == nullptr) out.event_us = out.wall_us;
  out.counts = finish_step(indexer);
  return out;
}

std::vector<StepVariant> timed_variants(const TtftConfig& config) {
  std::vector<StepVariant> out = {StepVariant{false}};
  out.insert(out.end(), config.modes.begin(), config.modes.end());
  return out;
}

double saved_pct(double base_us, double us) { return base_us > 0 ? 100.0 * (base_us - us) / base_us : 0; }
double ModeTtft::median_us() const { return median(cached_us); }
double ModeTtft::wall_median_us() const { return median(cached_wall_us); }
double TtftResult::uncached_median_us() const { return median(uncached_us); }
double TtftResult::gain_pct(size_t mode) const {
  return saved_pct(uncached_median_us(), modes.at(mode).median_us());
}
double TtftResult::wall_gain_pct(size_t mode) const {
  return saved_pct(median(uncached_wall_us), modes.at(mode).wall_median_us());
}

double estimated_rest_seconds(const TtftConfig& config, const RestOfLayer& rest) {
  std::map<ChunkStep, int> distinct;
  for (int32_t prompt : config.prompts) {
    for (const ChunkStep& c : chunk_steps(prompt, config.chunk_tokens)) distinct[c] = 1;
  }
  double rest_sum_us = 0;
  for (const RestSetting& s : rest_settings(config)) {
    if (s.rest_us > 0) {
      rest_sum_us += std::max(s.rest_us, rest.info(s.stand_in).calibration.shortest_us);
    }
  }
  double layers = 0;
  for (const std::string& model : config.models) layers += model_schedule(model).num_layers();
  const double steps_per_rep = 1.0 + static_cast<double>(config.modes.size());  // uncached + each mode
  return static_cast<double>(distinct.size()) * layers * rest_sum_us * steps_per_rep * config.reps *
         static_cast<double>(config.background_decodes.size()) * 1e-6;
}

namespace {

// "builds whole 3, window 0, compressed 0, tail 20; launches 23": what a counted step built.
std::string builds_by_part(const harness::CountingBuilder& counted) {
  std::ostringstream os;
  os << "builds";
  const char* separator = " ";
  for (opt::RowPart part :
       {opt::RowPart::kWhole, opt::RowPart::kWindow, opt::RowPart::kCompressed, opt::RowPart::kTail}) {
    os << separator << opt::row_part_name(part) << " " << counted.builds_of(part);
    separator = ", ";
  }
  os << "; launches " << counted.launches();
  return os.str();
}

// Every mode's outputs of the staged step (staged with its host copies) against the
// reference's (harness/sharing_check.h), and the step the simulation times in that mode
// against the checked one: the same builds, row part by row part (a timed step that fell back
// to another mode's builds fails here). Throws std::runtime_error naming what differs.
void verify_modes(const TtftConfig& config, const StagedStep& s, opt::MixedSparseIndicesBuilder& builder,
                  const RestOfLayer& rest, void* stream, const std::string& what) {
  harness::StepCase c;
  c.step = s.step;
  c.schedule = s.schedule;
  c.c4a_per_layer = s.c4a_per_layer;
  const std::vector<ref::BuilderOutput> want = harness::reference_outputs(c);
  const int64_t window_errors = harness::window_content_errors(c);
  for (const StepVariant& v : config.modes) {
    std::vector<harness::Mismatch> found;
    harness::CountingBuilder checked(builder), timed(builder);
    harness::check_sharing_path(v.mode, v.one_launch, c, want, window_errors, *s.staged, checked,
                                [&found](harness::Mismatch m) { found.push_back(std::move(m)); });
    run_measured_step(timed, s, v, RestSetting{}, rest, nullptr, stream);
    std::ostringstream os;
    os << what << ", mode " << v.mode_name() << ": ";
    if (!found.empty()) {
      os << found.size() << " mismatches with the reference";
      for (size_t i = 0; i < found.size() && i < 3; ++i) os << "\n  " << harness::format_mismatch(found[i]);
      throw std::runtime_error(os.str());
    }
    if (builds_by_part(timed) != builds_by_part(checked)) {
      os << "the timed step: " << builds_by_part(timed) << "; the checked step: " << builds_by_part(checked);
      throw std::runtime_error(os.str());
    }
  }
}

// Stages one distinct step and times it for every rest setting and repetition (the uncached
// step, then each mode's cached step), after one warm-up of each; with config.verify, first
// checks every mode's outputs against the reference.
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
  std::ostringstream what;
  what << schedule.name << " step of " << chunk.tokens << " tokens after " << chunk.context << " (+"
       << background << " decodes)";
  const double staging_start = now_us();
  const std::unique_ptr<StagedStep> staged =
      stage_step(config.backend, shape, schedule, /*keep_host=*/config.verify);
  const double verify_start = now_us();
  if (config.verify) verify_modes(config, *staged, builder, rest, stream, what.str());
  const double measure_start = now_us();
  const std::vector<StepVariant> variants = timed_variants(config);
  std::vector<harness::ExpectedCalls> expected;
  for (const StepVariant& v : variants) {
    expected.push_back(expected_step_calls(schedule, v));
    run_measured_step(builder, *staged, v, {}, rest, timer, stream);  // warm-up
  }
  const std::vector<RestSetting> settings = rest_settings(config);
  std::vector<StepTimes> times(settings.size());
  for (size_t i = 0; i < times.size(); ++i) {
    times[i].cached_us.resize(config.modes.size());
    times[i].cached_wall_us.resize(config.modes.size());
    for (int rep = 0; rep < config.reps; ++rep) {
      for (size_t k = 0; k < variants.size(); ++k) {
        const StepRun run = run_measured_step(builder, *staged, variants[k], settings[i], rest, timer, stream);
        const StepCounts& got = run.counts;
        if (got.builder_calls != expected[k].builds || got.launches != expected[k].launches ||
            got.content_errors != 0) {
          std::ostringstream os;
          os << what.str() << ", " << variants[k].mode_name() << ": " << got.builder_calls
             << " builder calls (expected " << expected[k].builds << "), " << got.launches
             << " launches (expected " << expected[k].launches << "), " << got.content_errors
             << " content errors";
          throw std::runtime_error(os.str());
        }
        if (k == 0) {
          times[i].uncached_us.push_back(run.event_us);
          times[i].uncached_wall_us.push_back(run.wall_us);
        } else {
          times[i].cached_us[k - 1].push_back(run.event_us);
          times[i].cached_wall_us[k - 1].push_back(run.wall_us);
        }
      }
    }
  }
  std::ostringstream os;
  os << what.str() << " staged in " << static_cast<int>((verify_start - staging_start) / 1e3) << " ms, ";
  if (config.verify) {
    os << config.modes.size() << " modes verified in "
       << static_cast<int>((measure_start - verify_start) / 1e3) << " ms, ";
  }
  os << variants.size() << " variants measured in "
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
  for (const StepVariant& v : config.modes) {
    if (!v.cached) throw std::invalid_argument("modes: the uncached step is always measured, not a mode");
  }
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
  const std::vector<RestSetting> settings = rest_settings(config);
  for (const RestSetting& s : settings) {
    if (s.stand_in != StandIn::kNone) rest.info(s.stand_in);  // throws before any work if missing
  }
  TtftRun out;
  const double run_start = now_us();
  for (auto& [key, times] : measured) {
    if (config.max_seconds > 0 && (now_us() - run_start) * 1e-6 > config.max_seconds) break;
    times = measure_step(config, schedules[key.model], key.chunk,
                         config.background_decodes[key.background], *builder, rest, timer.get(),
                         stream, progress);
    if (config.verify) out.verified_steps += static_cast<int64_t>(config.modes.size());
  }

  // TTFT of a prompt = the sum of its steps' times, repetition by repetition.
  out.measure_seconds = (now_us() - run_start) * 1e-6;
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
        for (size_t i = 0; i < settings.size(); ++i) {
          TtftResult res;
          res.model = config.models[m];
          res.prompt_tokens = prompt;
          res.background_decodes = config.background_decodes[b];
          res.rest_us = settings[i].rest_us;
          res.stand_in = settings[i].stand_in;
          res.steps = static_cast<int32_t>(steps.size());
          res.layers = schedule.num_layers();
          res.builder_calls_uncached = expected_step_calls(schedule, StepVariant{false}).builds * res.steps;
          res.uncached_us.assign(reps, 0);
          res.uncached_wall_us = res.uncached_us;
          for (const StepVariant& v : config.modes) {
            ModeTtft mode;
            mode.variant = v;
            const harness::ExpectedCalls calls = expected_step_calls(schedule, v);
            mode.builder_calls = calls.builds * res.steps;
            mode.launches = calls.launches * res.steps;
            mode.cached_us = mode.cached_wall_us = res.uncached_us;
            res.modes.push_back(std::move(mode));
          }
          for (const ChunkStep& c : steps) {
            const StepTimes& t = measured[StepKey{c, b, m}][i];
            for (size_t rep = 0; rep < reps; ++rep) {
              res.uncached_us[rep] += t.uncached_us[rep];
              res.uncached_wall_us[rep] += t.uncached_wall_us[rep];
              for (size_t k = 0; k < res.modes.size(); ++k) {
                res.modes[k].cached_us[rep] += t.cached_us[k][rep];
                res.modes[k].cached_wall_us[rep] += t.cached_wall_us[k][rep];
              }
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
