// ttft_report: how much time-to-first-token the per-step index cache saves (issue 5).
// Simulates chunked prefill (ttft_sim.h) uncached vs cached and writes ttft.md + ttft.json
// into --out DIR; bench/plot_ttft.py draws ttft.png from the JSON.
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
  --reps N                  repetitions per setting, the median is reported (default 3)
  --max-seconds S           stage no new step after S seconds; unfinished prompts are skipped
                            and listed (default 0: no limit)
  --quick                   CI smoke: prompts 256,768, chunk 512, rest 0,50, 1 rep
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
    o.config.prompts = {256, 768};
    o.config.chunk_tokens = 512;
    o.config.rest_us = {0, 50};
    o.config.reps = 1;
  }
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--quick") continue;
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
  for (double r : o.config.rest_us) {
    if (r < 0 || r > 100000) {
      throw std::invalid_argument("--rest-us: " + std::to_string(r) + " outside [0, 100000]");
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

nlohmann::json to_json(const Options& o, const GpuInfo& gpu, const RestOfLayer& rest,
                       const TtftRun& run) {
  using nlohmann::json;
  const bool cuda = o.config.backend == opt::Backend::kCuda;
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
      {"rest_of_layer", rest.what()},
  };
  json points = json::array();
  for (const auto& p : rest.calibration().points) {
    points.push_back({{"requested_us", p.requested_us}, {"measured_us", p.measured_us}});
  }
  meta["rest_calibration"] = {{"points", points},
                              {"offset_us", rest.calibration().offset_us},
                              {"slope", rest.calibration().slope},
                              {"globaltimer_tick_ns", rest.calibration().globaltimer_tick_ns}};
  json rows = json::array();
  meta["skipped"] = run.skipped;
  meta["max_seconds"] = o.config.max_seconds;
  for (const TtftResult& r : run.results) {
    rows.push_back({{"model", r.model},
                    {"prompt_tokens", r.prompt_tokens},
                    {"background_decodes", r.background_decodes},
                    {"rest_of_layer_us", r.rest_us},
                    {"steps", r.steps},
                    {"layers", r.layers},
                    {"builder_calls_uncached", r.builder_calls_uncached},
                    {"builder_calls_cached", r.builder_calls_cached},
                    {"uncached_ms", r.uncached_median_us() / 1e3},
                    {"cached_ms", r.cached_median_us() / 1e3},
                    {"gain_pct", r.gain_pct()},
                    {"uncached_wall_ms", median(r.uncached_wall_us) / 1e3},
                    {"cached_wall_ms", median(r.cached_wall_us) / 1e3},
                    {"wall_gain_pct", r.wall_gain_pct()},
                    {"uncached_us_reps", r.uncached_us},
                    {"cached_us_reps", r.cached_us}});
  }
  return {{"metadata", meta}, {"results", rows}};
}

std::string to_markdown(const nlohmann::json& doc) {
  const nlohmann::json& m = doc["metadata"];
  std::ostringstream os;
  os << "# TTFT gain of the per-step sparse-index cache\n\n";
  os << "- " << m["timing"].get<std::string>() << "; backend " << m["backend"].get<std::string>()
     << "\n";
  os << "- GPU: " << m["gpu_name"].get<std::string>() << "; CUDA driver "
     << m["driver_version"].get<std::string>() << ", runtime "
     << m["cuda_runtime_version"].get<std::string>() << "\n";
  os << "- date " << m["date"].get<std::string>() << ", commit " << m["git_commit"].get<std::string>()
     << "\n";
  os << "- chunked prefill, " << m["chunk_tokens"].get<int>()
     << " tokens per step; each layer = its index lookup/build (StepIndexer) + the rest of the "
        "layer simulated by a "
     << m["rest_of_layer"].get<std::string>() << "; median of " << m["reps"].get<int>()
     << " repetitions; gain = (uncached - cached) / uncached\n";
  os << "- rest of layer 0 gives the upper bound of the gain (index work only)\n";
  for (const nlohmann::json& skipped : m["skipped"]) {
    os << "- NOT MEASURED (time budget of " << m["max_seconds"].get<double>()
       << " s reached): " << skipped.get<std::string>() << "\n";
  }
  os << "\n";
  std::string model;
  for (const nlohmann::json& r : doc["results"]) {
    if (r["model"].get<std::string>() != model) {
      model = r["model"].get<std::string>();
      os << "\n## " << model_schedule(model).name << " (" << r["layers"].get<int>() << " layers)\n\n";
      os << "| prompt | steps | background decodes | rest of layer | builds uncached -> cached | "
            "TTFT uncached (ms) | TTFT cached (ms) | gain |\n";
      os << "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    }
    os << "| " << tokens_label(r["prompt_tokens"].get<int32_t>()) << " | " << r["steps"].get<int>()
       << " | " << r["background_decodes"].get<int>() << " | "
       << rest_label(r["rest_of_layer_us"].get<double>()) << " | "
       << r["builder_calls_uncached"].get<int64_t>() << " -> " << r["builder_calls_cached"].get<int64_t>()
       << " | " << fixed(r["uncached_ms"].get<double>(), 3) << " | "
       << fixed(r["cached_ms"].get<double>(), 3) << " | " << fixed(r["gain_pct"].get<double>(), 2)
       << " % |\n";
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
  if (!cuda) std::printf("ttft_report: CPU TIMINGS: rest of layer is a CPU spin, not a GPU kernel\n");
  std::printf("ttft_report: commit %s%s\n", o.commit.c_str(), o.quick ? " (--quick smoke run)" : "");

  std::unique_ptr<GpuStream> stream;
  if (cuda) stream = std::make_unique<GpuStream>();
  void* s = stream ? stream->get() : nullptr;
  const RestOfLayer rest(o.config.backend, s);
  const BusyWaitCalibration& cal = rest.calibration();
  std::printf("ttft_report: rest of layer = %s; calibration (requested -> measured us):", rest.what());
  for (const auto& p : cal.points) std::printf(" %.0f->%.1f", p.requested_us, p.measured_us);
  std::printf("; fit offset %.2f us, slope %.4f", cal.offset_us, cal.slope);
  if (cuda) std::printf("; %%globaltimer tick %.0f ns", cal.globaltimer_tick_ns);
  std::printf("\nttft_report: busy-waits alone take >= %.1f s of this run\n",
              estimated_rest_seconds(o.config));
  std::fflush(stdout);

  const TtftRun run =
      simulate_ttft(o.config, rest, s, [](const std::string& line) {
        std::printf("ttft_report: %s\n", line.c_str());
        std::fflush(stdout);
      });

  const nlohmann::json doc = to_json(o, gpu, rest, run);
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
