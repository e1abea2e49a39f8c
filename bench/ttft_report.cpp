// ttft_report: how much time-to-first-token the per-step index cache saves (issue 5), in each
// SPEC §8 sharing mode (issue 12). Simulates chunked prefill (ttft_sim.h) uncached and cached
// in each mode, with the rest of each layer
// played by a busy-wait and by an L2-evicting streaming kernel of the same calibrated
// duration, and writes ttft.md + ttft.json into --out DIR; bench/plot_ttft.py draws ttft.png
// from the JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"
#include "bench/gpu_timing.h"
#include "bench/ttft_sim.h"

namespace dsv4::bench {
namespace {

constexpr const char* kUsage = R"(usage: ttft_report [options]
  --out DIR                 write ttft.md and ttft.json there (default: ttft_out)
  --commit SHA              git commit recorded in the metadata (default: the build's)
  --backend auto|cuda|host  auto: cuda when a device is usable (default auto)
  --models LIST             flash,pro (default both)
  --prompts LIST            prompt lengths in tokens (default 1024,8192,32768,131072)
  --chunk N                 prefill tokens per step (default 8192)
  --background-decodes LIST decode requests added to every step (default 0)
  --background-context N    their context length (default 8192)
  --rest-us LIST            rest-of-layer durations in us (default 0,100,500,2000)
  --stand-ins LIST          what plays each rest > 0: busy-wait (touches no memory),
                            streaming (reads+writes >= 2 x L2, same duration)
                            (default busy-wait,streaming; rest 0 runs neither)
  --modes LIST              the cached step's SPEC §8 sharing modes, each timed beside the
                            uncached step: seed, split, tail, or any of them with _one_launch
                            (default seed,split,tail)
  --verify                  check every distinct step's outputs in every mode against the
                            reference before timing it (untimed; on with --quick)
  --reps N                  repetitions per setting, the median is reported (default 3)
  --max-seconds S           stage no new step after S seconds; unfinished prompts are skipped
                            and listed (default 0: no limit)
  --quick                   CI smoke: prompts 512,768 (2 distinct steps), chunk 512, rest 0,50
                            (both stand-ins), 1 rep, --verify
)";

struct Options {
  TtftConfig config;
  std::string out_dir = "ttft_out";
  std::string commit;
  std::string backend = "auto";
  bool quick = false;
};

template <class T>
std::vector<T> parse_list(const std::string& flag, const std::string& text) {
  std::vector<T> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::istringstream is(item);
    T v{};
    if (!(is >> v) || !is.eof()) {
      throw std::invalid_argument(flag + ": cannot parse '" + item + "' in '" + text + "'");
    }
    out.push_back(v);
  }
  if (out.empty()) throw std::invalid_argument(flag + ": empty list");
  return out;
}

template <class T>
T parse_one(const std::string& flag, const std::string& text) {
  const std::vector<T> v = parse_list<T>(flag, text);
  if (v.size() != 1) throw std::invalid_argument(flag + ": expected one value, got '" + text + "'");
  return v.front();
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool quick = false;
  // --quick first, so that explicit options given with it still win.
  for (int i = 1; i < argc; ++i) quick = quick || std::string(argv[i]) == "--quick";
  if (quick) {
    o.quick = true;
    o.config.prompts = {512, 768};  // steps 512 after 0 (both prompts) and 256 after 512
    o.config.chunk_tokens = 512;
    o.config.rest_us = {0, 50};
    o.config.reps = 1;
    o.config.verify = true;
  }
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--quick") continue;
    if (flag == "--verify") {
      o.config.verify = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw std::invalid_argument(flag + ": missing value");
      value = argv[++i];
    }
    if (flag == "--out") {
      o.out_dir = value;
    } else if (flag == "--commit") {
      o.commit = value;
    } else if (flag == "--backend") {
      o.backend = value;
    } else if (flag == "--models") {
      o.config.models = parse_list<std::string>(flag, value);
      for (const std::string& m : o.config.models) model_schedule(m);  // validates
    } else if (flag == "--prompts") {
      o.config.prompts = parse_list<int32_t>(flag, value);
    } else if (flag == "--chunk") {
      o.config.chunk_tokens = parse_one<int32_t>(flag, value);
    } else if (flag == "--background-decodes") {
      o.config.background_decodes = parse_list<int32_t>(flag, value);
    } else if (flag == "--background-context") {
      o.config.background_context = parse_one<int32_t>(flag, value);
    } else if (flag == "--rest-us") {
      o.config.rest_us = parse_list<double>(flag, value);
    } else if (flag == "--stand-ins") {
      o.config.stand_ins.clear();
      for (const std::string& name : parse_list<std::string>(flag, value)) {
        const StandIn s = stand_in_from_name(name);
        if (std::find(o.config.stand_ins.begin(), o.config.stand_ins.end(), s) !=
            o.config.stand_ins.end()) {
          throw std::invalid_argument("--stand-ins: " + name + " given twice");
        }
        o.config.stand_ins.push_back(s);
      }
    } else if (flag == "--modes") {
      o.config.modes.clear();
      for (const std::string& name : parse_list<std::string>(flag, value)) {
        StepVariant v;
        try {
          v = cached_variant_from_name(name);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument(flag + ": " + e.what());
        }
        for (const StepVariant& seen : o.config.modes) {
          if (seen.mode_name() == name) throw std::invalid_argument("--modes: " + name + " given twice");
        }
        o.config.modes.push_back(v);
      }
    } else if (flag == "--reps") {
      o.config.reps = parse_one<int>(flag, value);
    } else if (flag == "--max-seconds") {
      o.config.max_seconds = parse_one<double>(flag, value);
    } else {
      throw std::invalid_argument("unknown option " + flag + "\n" + kUsage);
    }
  }
  for (int32_t p : o.config.prompts) {
    if (p < 1) throw std::invalid_argument("--prompts: " + std::to_string(p) + " < 1");
  }
  for (int32_t b : o.config.background_decodes) {
    if (b < 0) throw std::invalid_argument("--background-decodes: " + std::to_string(b) + " < 0");
  }
  for (size_t i = 0; i < o.config.rest_us.size(); ++i) {
    const double r = o.config.rest_us[i];
    if (!(r >= 0 && r <= 100000)) {
      throw std::invalid_argument("--rest-us: " + std::to_string(r) + " outside [0, 100000]");
    }
    for (size_t j = 0; j < i; ++j) {
      if (o.config.rest_us[j] == r) {
        throw std::invalid_argument("--rest-us: " + std::to_string(r) + " given twice");
      }
    }
  }
  if (o.config.chunk_tokens < 1) throw std::invalid_argument("--chunk: must be >= 1");
  if (o.config.reps < 1) throw std::invalid_argument("--reps: must be >= 1");
  if (o.config.background_context < 1) {
    throw std::invalid_argument("--background-context: must be >= 1");
  }
  if (o.backend == "cuda") {
    if (!cuda_usable()) {
      throw std::invalid_argument("--backend cuda: no usable CUDA device (" + gpu_info().why_absent + ")");
    }
    o.config.backend = opt::Backend::kCuda;
  } else if (o.backend == "host" || o.backend == "cpu") {
    o.config.backend = opt::Backend::kHost;
  } else if (o.backend == "auto") {
    o.config.backend = cuda_usable() ? opt::Backend::kCuda : opt::Backend::kHost;
  } else {
    throw std::invalid_argument("--backend: unknown '" + o.backend + "' (auto, cuda, host)");
  }
  if (o.commit.empty()) o.commit = build_commit();
  return o;
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::string tokens_label(int32_t tokens) {
  return tokens % 1024 == 0 ? std::to_string(tokens / 1024) + "K" : std::to_string(tokens);
}

std::string rest_label(double us) {
  if (us == 0) return "0";
  if (us >= 1000) return fixed(us / 1000.0, us >= 10000 ? 0 : 1) + " ms";
  return fixed(us, 0) + " us";
}

// Streaming vs busy-wait: stand-ins whose measured durations differ by more than this are
// flagged as not matching (the TTFT rows of that rest would compare unequal times).
constexpr double kStandInMatchPct = 5.0;
constexpr int kStandInCheckSamples = 5;

nlohmann::json calibration_json(const DurationCalibration& cal) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : cal.points) {
    points.push_back({{"requested_us", p.requested_us}, {"measured_us", p.measured_us}});
  }
  return {{"points", points},
          {"offset_us", cal.offset_us},
          {"slope", cal.slope},
          {"shortest_us", cal.shortest_us},
          {"fit_from_us", cal.fit_from_us},
          {"samples", cal.samples},
          {"fit_points", cal.fit_points},
          {"fit_plausible", cal.fit_plausible},
          {"globaltimer_tick_ns", cal.globaltimer_tick_ns}};
}

nlohmann::json to_json(const Options& o, const GpuInfo& gpu, const RestOfLayer& rest,
                       const std::vector<StandInCheck>& checks, const TtftRun& run) {
  using nlohmann::json;
  const bool cuda = o.config.backend == opt::Backend::kCuda;
  std::string rest_of_layer;
  json stand_ins = json::array();
  for (const StandInInfo& i : rest.stand_ins()) {
    rest_of_layer += (rest_of_layer.empty() ? "" : "; ") + std::string(stand_in_name(i.stand_in)) +
                     " = " + i.what;
    json entry = {{"name", stand_in_name(i.stand_in)},
                  {"what", i.what},
                  {"calibration", calibration_json(i.calibration)}};
    if (i.stand_in == StandIn::kStreaming) {
      entry["buffer_bytes"] = i.buffer_bytes;
      entry["cache_bytes"] = i.cache_bytes;
      entry["evicts_cache"] = i.evicts_cache;
      entry["one_pass_us"] = i.calibration.shortest_us;
      // Bytes read + written per pass over the pass's measured time (launch included).
      entry["one_pass_gbps"] = i.calibration.shortest_us > 0
                                   ? 2.0 * static_cast<double>(i.buffer_bytes) /
                                         (i.calibration.shortest_us * 1e3)
                                   : 0.0;
    }
    stand_ins.push_back(entry);
  }
  double streaming_pass_us = 0;
  for (const StandInInfo& i : rest.stand_ins()) {
    if (i.stand_in == StandIn::kStreaming) streaming_pass_us = i.calibration.shortest_us;
  }
  json check_rows = json::array();
  for (const StandInCheck& c : checks) {
    json measured = json::object();
    double busy = 0, streaming = 0;
    for (size_t k = 0; k < c.stand_ins.size(); ++k) {
      measured[stand_in_name(c.stand_ins[k])] = c.measured_us[k];
      if (c.stand_ins[k] == StandIn::kBusyWait) busy = c.measured_us[k];
      if (c.stand_ins[k] == StandIn::kStreaming) streaming = c.measured_us[k];
    }
    json row = {{"requested_us", c.requested_us}, {"measured_us", measured}};
    if (busy > 0 && streaming > 0) {
      const double pct = 100.0 * (streaming - busy) / busy;
      row["streaming_vs_busy_wait_pct"] = pct;
      row["matched"] = std::fabs(pct) <= kStandInMatchPct;
    }
    if (streaming_pass_us > 0) row["below_one_streaming_pass"] = c.requested_us < streaming_pass_us;
    check_rows.push_back(row);
  }
  json meta = {
      {"date", utc_now_iso8601()},
      {"backend", opt::backend_name(o.config.backend)},
      {"timing", cuda ? "CUDA events, summed over steps (step start to step end)"
                      : "CPU timings: host wall clock, summed over steps"},
      {"gpu_name", cuda ? gpu.name : std::string("none (CPU timings)")},
      {"driver_version", cuda ? cuda_version_string(gpu.driver_version) : std::string("n/a")},
      {"cuda_runtime_version", cuda ? cuda_version_string(gpu.runtime_version) : std::string("n/a")},
      {"git_commit", o.commit},
      {"chunk_tokens", o.config.chunk_tokens},
      {"background_context", o.config.background_context},
      {"reps", o.config.reps},
      {"quick", o.quick},
      {"rest_of_layer", rest_of_layer},
      {"stand_ins", stand_ins},
      {"stand_in_check", check_rows},
      {"stand_in_check_samples", kStandInCheckSamples},
      {"stand_in_match_tolerance_pct", kStandInMatchPct},
  };
  json rows = json::array();
  meta["skipped"] = run.skipped;
  meta["max_seconds"] = o.config.max_seconds;
  meta["measure_seconds"] = run.measure_seconds;
  meta["verify"] = o.config.verify;
  meta["verified_steps"] = run.verified_steps;
  json modes = json::array(), per_step = json::object();
  for (const StepVariant& v : o.config.modes) modes.push_back(v.mode_name());
  meta["modes"] = modes;
  // Builds and launches per step of each model (the same for every step of a model here).
  for (const std::string& model : o.config.models) {
    const ref::ModelSchedule schedule = model_schedule(model);
    json entry = json::object();
    for (const StepVariant& v : timed_variants(o.config)) {
      const harness::ExpectedCalls calls = expected_step_calls(schedule, v);
      entry[v.mode_name()] = {{"builds", calls.builds}, {"launches", calls.launches}};
    }
    per_step[model] = entry;
  }
  meta["per_step"] = per_step;
  // A row per (setting, mode): the uncached columns repeat the setting's one measurement.
  for (const TtftResult& r : run.results) {
    const ModeTtft* seed = nullptr;
    for (const ModeTtft& mode : r.modes) {
      if (mode.variant.mode_name() == "seed") seed = &mode;
    }
    for (size_t k = 0; k < r.modes.size(); ++k) {
      const ModeTtft& mode = r.modes[k];
      json row = {{"model", r.model},
                  {"prompt_tokens", r.prompt_tokens},
                  {"background_decodes", r.background_decodes},
                  {"rest_of_layer_us", r.rest_us},
                  {"stand_in", stand_in_name(r.stand_in)},
                  {"mode", mode.variant.mode_name()},
                  {"steps", r.steps},
                  {"layers", r.layers},
                  {"builder_calls_uncached", r.builder_calls_uncached},
                  {"builder_calls_cached", mode.builder_calls},
                  {"launches_cached", mode.launches},
                  {"uncached_ms", r.uncached_median_us() / 1e3},
                  {"cached_ms", mode.median_us() / 1e3},
                  {"gain_pct", r.gain_pct(k)},
                  {"uncached_wall_ms", median(r.uncached_wall_us) / 1e3},
                  {"cached_wall_ms", mode.wall_median_us() / 1e3},
                  {"wall_gain_pct", r.wall_gain_pct(k)},
                  {"uncached_us_reps", r.uncached_us},
                  {"cached_us_reps", mode.cached_us}};
      if (seed != nullptr) row["gain_vs_seed_pct"] = saved_pct(seed->median_us(), mode.median_us());
      rows.push_back(row);
    }
  }
  return {{"metadata", meta}, {"results", rows}};
}

std::string calibration_line(const nlohmann::json& cal) {
  std::ostringstream os;
  os << "calibration (requested -> measured us, median of " << cal["samples"].get<int>() << "):";
  for (const nlohmann::json& p : cal["points"]) {
    os << " " << fixed(p["requested_us"].get<double>(), 0) << " -> "
       << fixed(p["measured_us"].get<double>(), 1);
  }
  os << "; fit over the " << cal["fit_points"].get<int>() << " points from "
     << fixed(cal["fit_from_us"].get<double>(), 0) << " us: measured = "
     << fixed(cal["offset_us"].get<double>(), 2) << " us + " << fixed(cal["slope"].get<double>(), 4)
     << " x requested";
  if (!cal["fit_plausible"].get<bool>()) os << " (IMPLAUSIBLE slope: offset 0, slope 1 used)";
  if (cal["fit_points"].get<int>() < 2) os << " (too few points: offset 0, slope 1 used)";
  return os.str();
}

std::string to_markdown(const nlohmann::json& doc) {
  const nlohmann::json& m = doc["metadata"];
  std::ostringstream os;
  os << "# TTFT gain of the per-step sparse-index cache, per sharing mode\n\n";
  os << "- " << m["timing"].get<std::string>() << "; backend " << m["backend"].get<std::string>()
     << "\n";
  os << "- GPU: " << m["gpu_name"].get<std::string>() << "; CUDA driver "
     << m["driver_version"].get<std::string>() << ", runtime "
     << m["cuda_runtime_version"].get<std::string>() << "\n";
  os << "- date " << m["date"].get<std::string>() << ", commit " << m["git_commit"].get<std::string>()
     << "\n";
  os << "- chunked prefill, " << m["chunk_tokens"].get<int>()
     << " tokens per step; each layer = its index lookup/build (StepIndexer) + the rest of the "
        "layer, played by a stand-in of calibrated duration (below); median of "
     << m["reps"].get<int>() << " repetitions; gain = (uncached - cached) / uncached\n";
  os << "- rest of layer 0 runs no stand-in (stand-in \"none\") and gives the upper bound of the "
        "gain (index work only)\n";
  os << "- cached in each SPEC §8 sharing mode (" << m["modes"].size()
     << "), timed after the uncached step repetition by repetition; vs seed = (seed - mode) / seed of "
        "the cached TTFTs\n";
  if (m["verify"].get<bool>()) {
    os << "- every mode's outputs of each of the " << m["verified_steps"].get<int64_t>()
       << " (step, mode) pairs checked against the reference before timing (--verify): all equal\n";
  } else {
    os << "- outputs not checked against the reference in this run (--verify does; every run checks "
          "each step's builds, launches and content errors)\n";
  }
  os << "- staged and measured in " << fixed(m["measure_seconds"].get<double>(), 1) << " s";
  if (m["max_seconds"].get<double>() > 0) {
    os << " (budget: no new step after " << fixed(m["max_seconds"].get<double>(), 0) << " s)";
  }
  os << "\n";
  for (const nlohmann::json& skipped : m["skipped"]) {
    os << "- NOT MEASURED (time budget of " << m["max_seconds"].get<double>()
       << " s reached): " << skipped.get<std::string>() << "\n";
  }

  os << "\n## Stand-ins for the rest of each layer\n\n";
  for (const nlohmann::json& s : m["stand_ins"]) {
    os << "- **" << s["name"].get<std::string>() << "**: " << s["what"].get<std::string>() << ".";
    if (s.contains("one_pass_us")) {
      os << " One pass (a request of 0) takes " << fixed(s["one_pass_us"].get<double>(), 1)
         << " us, " << fixed(s["one_pass_gbps"].get<double>(), 0)
         << " GB/s read + written, start-up overhead included.";
    }
    os << " " << calibration_line(s["calibration"]) << "\n";
  }
  const nlohmann::json& checks = m["stand_in_check"];
  if (!checks.empty()) {
    std::vector<std::string> names;
    for (const nlohmann::json& s : m["stand_ins"]) names.push_back(s["name"].get<std::string>());
    os << "\nEach stand-in's measured duration when asked for each rest of layer (median of "
       << m["stand_in_check_samples"].get<int>() << ", each run alone";
    if (names.size() > 1) {
      os << "; they should match within " << fixed(m["stand_in_match_tolerance_pct"].get<double>(), 0)
         << " %";
    }
    os << "):\n\n| rest of layer |";
    for (const std::string& n : names) os << " " << n << " measured (us) |";
    os << " streaming vs busy-wait | note |\n|---:|";
    for (size_t k = 0; k < names.size(); ++k) os << "---:|";
    os << "---:|---|\n";
    for (const nlohmann::json& c : checks) {
      const double requested = c["requested_us"].get<double>();
      os << "| " << rest_label(requested) << " |";
      for (const std::string& n : names) {
        os << " " << fixed(c["measured_us"][n].get<double>(), 1) << " |";
      }
      std::string note;
      if (c.contains("streaming_vs_busy_wait_pct")) {
        const double pct = c["streaming_vs_busy_wait_pct"].get<double>();
        os << " " << (pct >= 0 ? "+" : "") << fixed(pct, 1) << " % |";
        if (!c["matched"].get<bool>()) note = "MISMATCH: the two stand-ins' rows compare unequal times";
      } else {
        os << " – |";
      }
      if (c.value("below_one_streaming_pass", false)) {
        if (!note.empty()) note += "; ";
        note += "shorter than one streaming pass: the streaming stand-in takes a whole pass";
      }
      os << " " << note << " |\n";
    }
  }
  os << "\n";
  // A table per model, a row per setting: the uncached TTFT, then each mode's cached TTFT, its
  // gain and (beside the seed) its gain over the seed's cached TTFT.
  std::vector<std::string> modes;
  for (const nlohmann::json& name : m["modes"]) modes.push_back(name.get<std::string>());
  const bool seed = std::find(modes.begin(), modes.end(), "seed") != modes.end();
  const auto vs_seed = [seed](const std::string& mode) { return seed && mode != "seed"; };
  const nlohmann::json& results = doc["results"];
  std::string model;
  for (size_t i = 0; i + modes.size() <= results.size(); i += modes.size()) {
    const nlohmann::json& r = results[i];
    if (r["model"].get<std::string>() != model) {
      model = r["model"].get<std::string>();
      const nlohmann::json& per_step = m["per_step"][model];
      os << "\n## " << model_schedule(model).name << " (" << r["layers"].get<int>() << " layers)\n\n";
      os << "Builds (launches) per step: uncached " << per_step["uncached"]["builds"].get<int64_t>() << " ("
         << per_step["uncached"]["launches"].get<int64_t>() << ")";
      for (const std::string& mode : modes) {
        os << ", " << mode << " " << per_step[mode]["builds"].get<int64_t>() << " ("
           << per_step[mode]["launches"].get<int64_t>() << ")";
      }
      os << ".\n\n| prompt | steps | background decodes | rest of layer | stand-in | TTFT uncached (ms) |";
      std::string align = "|---:|---:|---:|---:|---|---:|";
      for (const std::string& mode : modes) {
        os << " " << mode << " (ms) | " << mode << " gain |";
        align += "---:|---:|";
        if (vs_seed(mode)) {
          os << " " << mode << " vs seed |";
          align += "---:|";
        }
      }
      os << "\n" << align << "\n";
    }
    os << "| " << tokens_label(r["prompt_tokens"].get<int32_t>()) << " | " << r["steps"].get<int>()
       << " | " << r["background_decodes"].get<int>() << " | "
       << rest_label(r["rest_of_layer_us"].get<double>()) << " | "
       << r["stand_in"].get<std::string>() << " | " << fixed(r["uncached_ms"].get<double>(), 3) << " |";
    for (size_t k = 0; k < modes.size(); ++k) {
      const nlohmann::json& row = results[i + k];
      os << " " << fixed(row["cached_ms"].get<double>(), 3) << " | " << fixed(row["gain_pct"].get<double>(), 2)
         << " % |";
      if (vs_seed(modes[k])) os << " " << fixed(row["gain_vs_seed_pct"].get<double>(), 2) << " % |";
    }
    os << "\n";
  }
  return os.str();
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

int run_report(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const bool cuda = o.config.backend == opt::Backend::kCuda;
  const GpuInfo gpu = gpu_info();
  std::printf("ttft_report: %s\n", device_line(gpu, cuda).c_str());
  if (!cuda) {
    std::printf("ttft_report: CPU TIMINGS: the stand-ins for the rest of the layer are CPU loops, "
                "not GPU kernels\n");
  }
  std::printf("ttft_report: commit %s%s\n", o.commit.c_str(), o.quick ? " (--quick smoke run)" : "");

  std::unique_ptr<GpuStream> stream;
  if (cuda) stream = std::make_unique<GpuStream>();
  void* s = stream ? stream->get() : nullptr;
  const RestOfLayer rest(o.config.backend, s, o.config.stand_ins);
  for (const StandInInfo& i : rest.stand_ins()) {
    const DurationCalibration& cal = i.calibration;
    std::printf("ttft_report: stand-in %s = %s\nttft_report:   calibration (requested -> measured us):",
                stand_in_name(i.stand_in), i.what.c_str());
    for (const auto& p : cal.points) std::printf(" %.0f->%.1f", p.requested_us, p.measured_us);
    std::printf("; fit over %d points from %.0f us: offset %.2f us, slope %.4f", cal.fit_points,
                cal.fit_from_us, cal.offset_us, cal.slope);
    if (cuda && i.stand_in == StandIn::kBusyWait) {
      std::printf("; %%globaltimer tick %.0f ns", cal.globaltimer_tick_ns);
    }
    if (i.stand_in == StandIn::kStreaming) std::printf("; one pass %.1f us", cal.shortest_us);
    std::printf("\n");
  }
  const std::vector<StandInCheck> checks = check_stand_ins(o.config, rest, kStandInCheckSamples);
  for (const StandInCheck& c : checks) {
    std::printf("ttft_report: rest of layer %.0f us measured as", c.requested_us);
    double busy = 0, streaming = 0;
    for (size_t k = 0; k < c.stand_ins.size(); ++k) {
      std::printf(" %s %.1f us", stand_in_name(c.stand_ins[k]), c.measured_us[k]);
      if (c.stand_ins[k] == StandIn::kBusyWait) busy = c.measured_us[k];
      if (c.stand_ins[k] == StandIn::kStreaming) streaming = c.measured_us[k];
    }
    if (busy > 0 && streaming > 0) {
      const double pct = 100.0 * (streaming - busy) / busy;
      std::printf(" (streaming %+.1f %%%s)", pct,
                  std::fabs(pct) > kStandInMatchPct ? ": MISMATCH" : "");
    }
    for (const StandInInfo& i : rest.stand_ins()) {
      if (i.stand_in == StandIn::kStreaming && c.requested_us < i.calibration.shortest_us) {
        std::printf("; WARNING: shorter than one streaming pass (%.1f us)", i.calibration.shortest_us);
      }
    }
    std::printf("\n");
  }
  std::printf("ttft_report: modes");
  for (const StepVariant& v : o.config.modes) std::printf(" %s", v.mode_name().c_str());
  std::printf(" (each timed beside the uncached step: %zu steps per step of a prompt, setting and "
              "repetition)%s\n",
              timed_variants(o.config).size(), o.config.verify ? "; outputs checked against the reference" : "");
  const double rest_s = estimated_rest_seconds(o.config, rest);
  std::printf("ttft_report: the stand-ins alone take >= %.1f s of this run", rest_s);
  if (o.config.max_seconds > 0) {
    std::printf(" (budget %.0f s%s)", o.config.max_seconds,
                rest_s > 0.8 * o.config.max_seconds ? ": the longest prompts may be skipped" : "");
  }
  std::printf("\n");
  std::fflush(stdout);

  const TtftRun run =
      simulate_ttft(o.config, rest, s, [](const std::string& line) {
        std::printf("ttft_report: %s\n", line.c_str());
        std::fflush(stdout);
      });
  std::printf("ttft_report: staged and measured in %.1f s\n", run.measure_seconds);

  const nlohmann::json doc = to_json(o, gpu, rest, checks, run);
  const std::string md = to_markdown(doc);
  std::filesystem::create_directories(o.out_dir);
  const std::filesystem::path dir(o.out_dir);
  write_file(dir / "ttft.json", doc.dump(2) + "\n");
  write_file(dir / "ttft.md", md);
  std::printf("\n%s\nttft_report: wrote %s and %s\n", md.c_str(), (dir / "ttft.md").c_str(),
              (dir / "ttft.json").c_str());
  return 0;
}

}  // namespace
}  // namespace dsv4::bench

int main(int argc, char** argv) {
  try {
    return dsv4::bench::run_report(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ttft_report: error: %s\n", e.what());
    return 1;
  }
}
