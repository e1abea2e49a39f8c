// kernel_bench: one builder call per layer kind x case x model (issue 3 §4).
//
// cuda/kernel/<model>/<kind>/<case>: device time of one build by CUDA events, L2 flushed
// before every iteration (a write of max(2 x L2, 64 MiB)) and a short busy-wait head start
// so that the host's launch latency stays out of the device time. host_us is the wall time
// of the build() call alone (launch included, no sync). GB/s counts the bytes of
// build_bytes.h; pct_of_copy_bw compares it with the device-to-device copy bandwidth
// measured at the start of the same run (also reported as cuda/copy_bw/d2d_1GiB).
// cpu/...: the same cases on the host backend (CPU timings, caches warm).
// cuda/launch_floor/empty_kernel: the same timing around an empty kernel (1 CTA of 32 threads,
// cudaLaunchKernel + cudaGetLastError like the builder): device_us is the device floor of any
// build, host_us the host floor of its launch call. cuda/launch_floor/empty_kernel_args: the
// same kernel taking a by-value argument of sizeof(MixedSparseIndicesArgs) (arg_bytes), the
// parameter-copy cost. CUDA backend only (not registered on the host backend).
// <prefix>/cache_hit/<kind>: StepIndexCache::get_or_build on a hit (target <= 0.2 us);
// <prefix>/indexer_hit/<kind>: StepIndexer::layer_indices on a hit (request + key + lookup).
// Every staged case is first checked against the reference, element for element.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"
#include "bench/keep.h"
#include "bench/build_bytes.h"
#include "bench/gpu_timing.h"
#include "optimized/step_indexer.h"
#include "optimized/validation.h"

namespace dsv4::bench {
namespace {

constexpr int kCudaIterations = 300;
constexpr int64_t kHeadStartNs = 20000;  // 20 us: the host enqueues the build meanwhile
constexpr double kBuildHostTargetUs = 5.0;
constexpr double kCacheHitTargetUs = 0.2;

struct KernelConfig {
  opt::Backend backend;
  std::string model;
  ref::LayerKind kind;
  std::string case_name;
  std::string key() const {
    return std::string(timing_prefix(backend)) + "/" + model + "/" + ref::layer_kind_name(kind) +
           "/" + case_name;
  }
};

// One layer of one case staged in a backend, checked against the reference. A benchmark
// function runs once per repetition: only the most recent config is kept.
struct StagedLayer {
  std::string key;
  std::unique_ptr<StagedStep> staged;
  opt::BuildRequest request;
  BuildBytes bytes;
  int32_t width = 0;
  std::string error;  // non-empty: the build disagrees with the reference (or staging failed)
};

// Process-wide state, torn down in order (device buffers before the stream) by main().
struct Run {
  GpuInfo gpu;
  std::unique_ptr<GpuStream> stream;
  std::unique_ptr<L2Flusher> flusher;
  CopyBandwidth copy;
  std::map<opt::Backend, std::unique_ptr<opt::MixedSparseIndicesBuilder>> builders;
  StagedLayer staged;  // the most recent config only
  void tear_down() {
    staged = StagedLayer{};
    builders.clear();
    flusher.reset();
    stream.reset();
  }
};
Run& run() {
  static Run r;
  return r;
}

void* cuda_stream(opt::Backend backend) {
  return backend == opt::Backend::kCuda ? run().stream->get() : nullptr;
}

opt::MixedSparseIndicesBuilder& builder(opt::Backend backend) {
  auto& b = run().builders[backend];
  if (!b) b = make_builder(backend, cuda_stream(backend));
  return *b;
}

std::string first_mismatch(const ref::BuilderOutput& want, const harness::HostIndices& got) {
  if (want.sparse_indices.rows() != got.sparse_indices.rows() ||
      want.sparse_indices.cols() != got.sparse_indices.cols()) {
    std::ostringstream os;
    os << "shape " << got.sparse_indices.rows() << "x" << got.sparse_indices.cols()
       << " != reference " << want.sparse_indices.rows() << "x" << want.sparse_indices.cols();
    return os.str();
  }
  for (Eigen::Index t = 0; t < want.sparse_indices.rows(); ++t) {
    if (want.sparse_lens(t) != got.sparse_lens(t)) {
      return "sparse_lens[" + std::to_string(t) + "] = " + std::to_string(got.sparse_lens(t)) +
             ", reference " + std::to_string(want.sparse_lens(t));
    }
    for (Eigen::Index c = 0; c < want.sparse_indices.cols(); ++c) {
      if (want.sparse_indices(t, c) != got.sparse_indices(t, c)) {
        return "sparse_indices[" + std::to_string(t) + "][" + std::to_string(c) + "] = " +
               std::to_string(got.sparse_indices(t, c)) + ", reference " +
               std::to_string(want.sparse_indices(t, c));
      }
    }
  }
  return "";
}

StagedLayer& staged_layer(const KernelConfig& cfg) {
  StagedLayer& current = run().staged;
  if (current.key == cfg.key()) return current;
  current = StagedLayer{};
  current.key = cfg.key();
  try {
    const ref::ModelSchedule schedule =
        single_layer_schedule(model_schedule(cfg.model), cfg.kind);
    current.staged =
        stage_step(cfg.backend, bench_case(cfg.case_name).shape, schedule, /*keep_host=*/true);
    const StagedStep& s = *current.staged;
    const ref::BuilderInputs ref_inputs = bench_layer_inputs(s.step, schedule, s.c4a_per_layer, 0);
    current.request = opt::layer_build_request(s.staged->inputs(), schedule.compress_ratios[0],
                                               s.staged->c4a(0));
    opt::validate_step_structure(current.request, s.staged->inputs().host);
    opt::validate_request_shape(current.request);
    current.bytes = build_bytes(ref_inputs);

    opt::MixedSparseIndicesBuilder& b = builder(cfg.backend);
    const opt::BuiltIndices built = b.build(current.request);
    current.width = built.width;
    const harness::HostIndices got = harness::download(cfg.backend, built);
    const int64_t errors = b.take_content_errors();
    b.release_outputs();
    const ref::BuilderOutput want = ref::build_mixed_sparse_indices(ref_inputs);
    current.error = first_mismatch(want, got);
    if (current.error.empty() && errors != want.content_errors) {
      current.error = "content errors " + std::to_string(errors) + ", reference " +
                      std::to_string(want.content_errors);
    }
    if (!current.error.empty()) current.error = cfg.key() + " disagrees with the reference: " + current.error;
  } catch (const std::exception& e) {
    current.error = cfg.key() + ": staging failed: " + e.what();
    try {
      builder(cfg.backend).release_outputs();
    } catch (const std::exception&) {
      // already reported by the staging error
    }
  }
  return current;
}

int cpu_iterations(const BenchCase& c, const ref::ModelSchedule& model) {
  const harness::StepShape& s = c.shape;
  const double tokens = static_cast<double>(s.num_decodes) * s.decode_tokens_each +
                        static_cast<double>(s.num_prefills) * s.prefill_tokens_each;
  const double elements = tokens * (model.window + std::max(model.c4a_topk, 1024));
  return std::clamp(static_cast<int>(3e7 / elements), 2, 200);
}

void set_throughput_counters(benchmark::State& state, const StagedLayer& s, double device_us,
                             double host_us, opt::Backend backend) {
  const double bytes = static_cast<double>(s.bytes.total());
  const double gbps = device_us > 0 ? bytes / (device_us * 1e-6) / 1e9 : 0;
  state.counters["device_us"] = device_us;
  state.counters["host_us"] = host_us;
  state.counters["bytes"] = bytes;
  state.counters["GBps"] = gbps;
  state.counters["tokens"] = s.request.num_tokens;
  state.counters["width"] = s.width;
  if (backend == opt::Backend::kCuda) {
    state.counters["copy_GBps"] = run().copy.median_gbps;
    state.counters["pct_of_copy_bw"] =
        run().copy.median_gbps > 0 ? 100.0 * gbps / run().copy.median_gbps : 0;
    state.counters["host_target_us"] = kBuildHostTargetUs;
  }
}

void BM_kernel(benchmark::State& state, KernelConfig cfg) {
  StagedLayer& s = staged_layer(cfg);
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  opt::MixedSparseIndicesBuilder& b = builder(cfg.backend);
  const bool cuda = cfg.backend == opt::Backend::kCuda;
  std::unique_ptr<EventTimer> timer;
  if (cuda) timer = std::make_unique<EventTimer>();
  void* stream = cuda_stream(cfg.backend);
  double device_total = 0, host_total = 0;
  int64_t n = 0;
  bool failed = false;
  for (auto _ : state) {
    try {
      if (cuda) {
        run().flusher->flush(stream);
        gpu_busy_wait_ns(stream, kHeadStartNs);
        timer->start(stream);
      }
      const double t0 = now_us();
      const opt::BuiltIndices built = b.build(s.request);
      const double host_us = now_us() - t0;
      keep(built.sparse_indices);
      double device_us = host_us;
      if (cuda) {
        timer->stop(stream);
        device_us = timer->elapsed_us();
      }
      b.release_outputs();
      state.SetIterationTime(device_us * 1e-6);
      device_total += device_us;
      host_total += host_us;
      ++n;
    } catch (const std::exception& e) {
      state.SkipWithError((cfg.key() + ": " + e.what()).c_str());
      failed = true;
      break;
    }
  }
  if (failed || n == 0) return;
  try {
    const int64_t errors = b.take_content_errors();
    if (errors != 0) {
      state.SkipWithError((cfg.key() + ": " + std::to_string(errors) + " content errors").c_str());
      return;
    }
  } catch (const std::exception& e) {
    state.SkipWithError((cfg.key() + ": " + e.what()).c_str());
    return;
  }
  set_throughput_counters(state, s, device_total / static_cast<double>(n),
                          host_total / static_cast<double>(n), cfg.backend);
  std::ostringstream label;
  if (cuda) {
    label << "CUDA events, L2 flushed; host<=" << kBuildHostTargetUs << "us "
          << (host_total / static_cast<double>(n) <= kBuildHostTargetUs ? "MET" : "MISSED");
  } else {
    label << "CPU timings (host backend)";
  }
  state.SetLabel(label.str());
}

// The launch floor: an empty kernel timed exactly as BM_kernel times a build.
void BM_launch_floor(benchmark::State& state, bool with_args) {
  const char* name =
      with_args ? "cuda/launch_floor/empty_kernel_args" : "cuda/launch_floor/empty_kernel";
  void* stream = run().stream->get();
  const LaunchFloorArgs args{};
  auto launch = [&] {
    if (with_args) {
      launch_empty_kernel_args(stream, args);
    } else {
      launch_empty_kernel(stream);
    }
  };
  double device_total = 0, host_total = 0;
  int64_t n = 0;
  try {
    EventTimer timer;
    // Warm-up: module load and first-launch costs stay out of the numbers.
    launch();
    run().stream->synchronize();
    for (auto _ : state) {
      run().flusher->flush(stream);
      gpu_busy_wait_ns(stream, kHeadStartNs);
      timer.start(stream);
      const double t0 = now_us();
      launch();
      const double host_us = now_us() - t0;
      timer.stop(stream);
      const double device_us = timer.elapsed_us();
      state.SetIterationTime(device_us * 1e-6);
      device_total += device_us;
      host_total += host_us;
      ++n;
    }
  } catch (const std::exception& e) {
    state.SkipWithError((std::string(name) + ": " + e.what()).c_str());
    return;
  }
  if (n == 0) return;
  state.counters["device_us"] = device_total / static_cast<double>(n);
  state.counters["host_us"] = host_total / static_cast<double>(n);
  state.counters["arg_bytes"] = with_args ? static_cast<double>(sizeof(LaunchFloorArgs)) : 0.0;
  state.SetLabel(with_args ? "empty kernel, by-value argument of sizeof(MixedSparseIndicesArgs); "
                             "CUDA events, L2 flushed"
                           : "empty kernel, 1 CTA x 32 threads; CUDA events, L2 flushed");
}

// The copy ceiling as its own benchmark: each iteration one timed 1 GiB D2D copy.
void BM_copy_bw(benchmark::State& state) {
  const size_t bytes = size_t{1} << 30;
  double total_us = 0;
  int64_t n = 0;
  for (auto _ : state) {
    try {
      const CopyBandwidth c = measure_copy_bandwidth(bytes, 1, run().stream->get());
      state.SetIterationTime(c.median_us * 1e-6);
      total_us += c.median_us;
      ++n;
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  if (n == 0) return;
  const double mean_us = total_us / static_cast<double>(n);
  state.counters["device_us"] = mean_us;
  state.counters["bytes"] = 2.0 * static_cast<double>(bytes);
  state.counters["GBps"] = 2.0 * static_cast<double>(bytes) / (mean_us * 1e-6) / 1e9;
  state.counters["startup_median_GBps"] = run().copy.median_gbps;
  state.SetLabel("cudaMemcpyAsync D2D, bytes read + written");
}

// A hit of the per-step cache (StepIndexCache) or of the engine entry point (StepIndexer).
void BM_hit(benchmark::State& state, KernelConfig cfg, bool through_indexer) {
  StagedLayer& s = staged_layer(cfg);
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  opt::MixedSparseIndicesBuilder& b = builder(cfg.backend);
  const opt::LayerKind kind = opt::layer_kind_from_ratio(s.request.ratio);
  double elapsed_us = 0;
  int64_t builds = 0, hits = 0;
  try {
    if (through_indexer) {
      opt::StepIndexer indexer(b, s.staged->staged->inputs(), opt::CacheOptions{});
      const int32_t ratio = s.staged->schedule.compress_ratios[0];
      keep(indexer.layer_indices(ratio));
      const double t0 = now_us();
      for (auto _ : state) keep(indexer.layer_indices(ratio).sparse_indices);
      elapsed_us = now_us() - t0;
      builds = indexer.cache().builder_calls();
      hits = indexer.cache().hits();
      indexer.end_step();
    } else {
      opt::StepIndexCache cache(b, opt::CacheOptions{});
      keep(cache.get_or_build(kind, s.request));
      const double t0 = now_us();
      for (auto _ : state) keep(cache.get_or_build(kind, s.request).sparse_indices);
      elapsed_us = now_us() - t0;
      builds = cache.builder_calls();
      hits = cache.hits();
      cache.end_step();
    }
  } catch (const std::exception& e) {
    state.SkipWithError((cfg.key() + ": " + e.what()).c_str());
    return;
  }
  if (builds != 1 || hits != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError((cfg.key() + ": expected 1 build and " +
                         std::to_string(state.iterations()) + " hits, got " +
                         std::to_string(builds) + " and " + std::to_string(hits))
                            .c_str());
    return;
  }
  const double host_us = elapsed_us / static_cast<double>(state.iterations());
  state.counters["host_us"] = host_us;
  std::ostringstream label;
  if (through_indexer) {
    label << "StepIndexer::layer_indices hit";
  } else {
    state.counters["host_target_us"] = kCacheHitTargetUs;
    label << "get_or_build hit; target<=" << kCacheHitTargetUs << "us "
          << (host_us <= kCacheHitTargetUs ? "MET" : "MISSED");
  }
  state.SetLabel(label.str());
}

void register_benchmarks(const BackendChoice& backends) {
  for (opt::Backend backend : backends.list()) {
    const std::string prefix = timing_prefix(backend);
    const bool cuda = backend == opt::Backend::kCuda;
    if (cuda) {
      benchmark::RegisterBenchmark((prefix + "/copy_bw/d2d_1GiB").c_str(), BM_copy_bw)
          ->UseManualTime()
          ->Iterations(10)
          ->Unit(benchmark::kMicrosecond);
      for (bool with_args : {false, true}) {
        benchmark::RegisterBenchmark(
            (prefix + "/launch_floor/" + (with_args ? "empty_kernel_args" : "empty_kernel")).c_str(),
            BM_launch_floor, with_args)
            ->UseManualTime()
            ->Iterations(kCudaIterations)
            ->Unit(benchmark::kMicrosecond);
      }
    }
    for (ref::LayerKind kind : {ref::LayerKind::kSwaOnly, ref::LayerKind::kC128A}) {
      const KernelConfig cfg{backend, "flash", kind, "decode64_ctx8K"};
      const std::string name = std::string(ref::layer_kind_name(kind));
      benchmark::RegisterBenchmark((prefix + "/cache_hit/" + name).c_str(), BM_hit, cfg, false)
          ->MinTime(0.05);
      benchmark::RegisterBenchmark((prefix + "/indexer_hit/" + name).c_str(), BM_hit, cfg, true)
          ->MinTime(0.05);
    }
    for (const std::string& model : model_names()) {
      const ref::ModelSchedule schedule = model_schedule(model);
      for (ref::LayerKind kind : kinds_present(schedule)) {
        for (const BenchCase& c : bench_cases()) {
          const KernelConfig cfg{backend, model, kind, c.name};
          benchmark::RegisterBenchmark((prefix + "/kernel/" + model + "/" +
                                        ref::layer_kind_name(kind) + "/" + c.name)
                                           .c_str(),
                                       BM_kernel, cfg)
              ->UseManualTime()
              ->Iterations(cuda ? kCudaIterations : cpu_iterations(c, schedule))
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}

}  // namespace
}  // namespace dsv4::bench

int main(int argc, char** argv) {
  using namespace dsv4::bench;
  try {
    const BackendChoice backends = parse_backends(&argc, argv);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    Run& r = run();
    r.gpu = gpu_info();
    const std::string device = device_line(r.gpu, backends.cuda);
    std::printf("kernel_bench: %s\n", device.c_str());
    if (backends.host && backends.cuda) std::printf("kernel_bench: cpu/ benchmarks are CPU timings\n");
    if (!backends.cuda) {
      std::printf("kernel_bench: launch_floor benchmarks need the CUDA backend: not registered\n");
    }
    benchmark::AddCustomContext("dsv4_device", device);
    benchmark::AddCustomContext("dsv4_commit", build_commit());
    if (backends.cuda) {
      r.stream = std::make_unique<GpuStream>();
      r.flusher = std::make_unique<L2Flusher>();
      r.copy = measure_copy_bandwidth(size_t{1} << 30, 9, r.stream->get());
      std::printf("kernel_bench: D2D copy bandwidth (1 GiB, read+write, median of %zu) = %.1f GB/s "
                  "(min %.1f, max %.1f); L2 flush writes %zu MiB\n",
                  r.copy.samples_us.size(), r.copy.median_gbps, r.copy.min_gbps, r.copy.max_gbps,
                  r.flusher->bytes() >> 20);
      benchmark::AddCustomContext("dsv4_gpu", r.gpu.name);
      benchmark::AddCustomContext("dsv4_copy_bw_GBps", std::to_string(r.copy.median_gbps));
      benchmark::AddCustomContext("dsv4_l2_flush_bytes", std::to_string(r.flusher->bytes()));
    }
    std::fflush(stdout);
    register_benchmarks(backends);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    r.tear_down();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_bench: error: %s\n", e.what());
    run().tear_down();  // device memory before the stream, while CUDA is still up
    return 1;
  }
  return 0;
}
