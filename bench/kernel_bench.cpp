// kernel_bench: one builder call per layer kind x case x model (issue 3 §4).
//
// cuda/kernel/<model>/<kind>/<case>: device time of one build by CUDA events, L2 flushed
// before every iteration (a write of max(2 x L2, 64 MiB)) and a short busy-wait head start
// so that the host's launch latency stays out of the device time. host_us is the wall time
// of the build() call alone (launch included, no sync). GB/s counts the bytes of
// build_bytes.h; pct_of_copy_bw compares it with the device-to-device copy bandwidth
// measured at the start of the same run (also reported as cuda/copy_bw/d2d_1GiB).
// cpu/...: the same cases on the host backend (CPU timings, caches warm).
// cuda/kernel_planned/...: the same build reading the step's token plan (kernels/token_plan.h),
// as every build of a cached step after its first does (StepIndexCache); cases with prefill
// rows only (a decode row has no plan entry). The plan is written once, untimed, by a build of
// the same case.
// --programmatic_launch: the timed builds launched with programmatic dependent launch, as the
// Python package and StepIndexer launch them (default: plainly, as the peer's kernel is).
// --no_gathered_lookups: no build takes the gathered-lookups kernel (CudaBuilderOptions), the
// other half of a same-binary A/B of it.
// cuda/launch_floor/empty_kernel: the same timing around an empty kernel (1 CTA of 32 threads,
// cudaLaunchKernel + cudaGetLastError, the runtime's plain launch): device_us is the device floor of any
// build, host_us the host floor of its launch call. cuda/launch_floor/empty_kernel_args: the
// same kernel taking a by-value argument of sizeof(MixedSparseIndicesArgs) (arg_bytes), the
// parameter-copy cost; .../empty_kernel_programmatic: launched with programmatic dependent
// launch through the runtime (the attribute's host cost; the builder's launch before ea831b8);
// ..._driver_programmatic: the same through the driver's cuLaunchKernelEx, as the builder
// launches its builds since ea831b8 (the runtime's host cost). CUDA backend only (not
// registered on the host backend).
// <prefix>/cache_hit/<kind>: StepIndexCache::get_or_build on a hit (target <= 0.2 us);
// <prefix>/indexer_hit/<kind>: StepIndexer::layer_indices on a hit (request + key + lookup).
// <prefix>/step_check/<case>: the step's structural check (SPEC §4, O(T + R) over the host
// copies of its metadata), which runs on the host once per step before its first launch.
// cuda/launch_floor/dependent_reads_<n>: one thread following n dependent reads (each a DRAM
// round trip after the flush) then one store: the latency floor of a small (decode) build.
// cuda/byte_floor/<model>/<kind>/<case>: a streaming kernel moving exactly the case's bytes,
// timed like the build: the measured floor of a build of that size (StreamingBytes).
// cuda/chain_floor/<hops>/<model>/<kind>/<case>: the same bytes, each thread's writes after
// <hops> dependent reads (its row's entry; 2: then a table entry it names), as a planned
// prefill build's columns wait on plan -> block table and a local-form decode row's on its
// input -> block table: 1 is a floor of every build (no output word is known before a read),
// 2 of the translated columns.
// cuda/translated_floor/<model>/<kind>/<case> (the cases whose builds translate inputs: C4A, and
// C128A with prefill rows): the 2-read chain floor with each 16-byte word of the translated
// inputs (BuildBytes::translated_inputs) written only after a table entry its own value names,
// as a translated column waits on input -> block table (StreamingBytes::kTranslated).
// With --warm_l2 (a diagnostic): no L2 flush before the timed builds.
// With --head_start_us=N: the spin between the flush and a timed launch lasts N us (default 20).
// With --l2_flush_mib=N (the shared main's): the flush reads N MiB instead of max(2 x L2, 64 MiB).
// With --warm_code (a diagnostic): after each flush of a prefill-only CUDA case, before the head
// start, an untimed build of kWarmCodeTokens rows of the same case shape (a step staged apart:
// its own inputs, tables and outputs) by the same kernel and launch shape, so that the timed
// build finds its kernel's code in the L2 and none of its data: what fetching a build's code
// from DRAM after the flush costs it, against the default.
// With --shape_sweep: cuda/shape/<threads per row>x<chunks>/<model>/<kind>/<case>, the target
// cases of issue 8 with every compiled launch shape forced (the policy's tuning data).
// Every staged case is first checked against the reference, element for element, with every
// builder (launch shape) that times it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "bench/bench_cases.h"
#include "bench/bench_main.h"
#include "bench/build_bytes.h"
#include "bench/keep.h"
#include "bench/streaming_floors.h"
#include "harness/compare_build.h"
#include "kernels/mixed_sparse_indices_policy.h"
#include "optimized/backend_buffer.h"
#include "optimized/cuda_builder.h"
#include "optimized/step_indexer.h"
#include "optimized/validation.h"

namespace dsv4::bench {
namespace {

constexpr int kCudaIterations = 300;
constexpr int kByteFloorIterations = 100;  // each times all StreamingBytes::kShapes
constexpr int64_t kHeadStartNs = 20000;  // 20 us: the host enqueues the build meanwhile (--head_start_us)
constexpr double kBuildHostTargetUs = 5.0;
constexpr double kCacheHitTargetUs = 0.2;

struct KernelConfig {
  opt::Backend backend;
  std::string model;
  ref::LayerKind kind;
  std::string case_name;
  kernels::LaunchShape shape{};  // forced launch shape (CUDA); group_threads 0 = the policy's
  bool planned = false;  // the build reads the step's token plan
  // The staged inputs: the same for every launch shape.
  std::string staging_key() const {
    return std::string(timing_prefix(backend)) + "/" + model + "/" + ref::layer_kind_name(kind) +
           "/" + case_name;
  }
  std::string shape_name() const {
    return std::to_string(shape.group_threads) + "x" + std::to_string(shape.chunks);
  }
  std::string key() const {
    return (shape.group_threads == 0 ? staging_key() : staging_key() + " shape " + shape_name()) +
           (planned ? " planned" : "");
  }
};

// One layer of one case staged in a backend, checked against the reference. A benchmark
// function runs once per repetition: only the most recent config is kept.
struct StagedLayer {
  std::string key;  // staging_key()
  std::unique_ptr<StagedStep> staged;
  opt::BuildRequest request;
  opt::BackendBuffer token_plan;  // the step's plan, written by one build when a planned config first needs it
  BuildBytes bytes;
  int64_t lookup_entries = 1;  // the lookup floor's table (lookup_floor_entries)
  ref::BuilderOutput want;  // the reference's output
  int32_t width = 0;
  std::string error;  // non-empty: staging failed, or the last checked build disagrees
  std::set<std::string> verified;  // config keys whose build matched the reference
  // --warm_code: the code warmer's step (a prefill-only case only) and request.
  std::unique_ptr<StagedStep> code_warmer;
  opt::BuildRequest code_warmer_request;
};

// Rows of --warm_code's warming build: enough to run every part of a row's code, a few
// hundred KB of data.
constexpr int32_t kWarmCodeTokens = 64;

// Process-wide state besides bench_device(), torn down before it by the shared main().
struct Run {
  std::unique_ptr<CopyBuffers> copy_buffers;  // the run's one copy pair (CopyBuffers says why one)
  CopyBandwidth copy;                          // measured at start-up
  std::map<std::string, std::unique_ptr<opt::MixedSparseIndicesBuilder>> builders;  // by backend + shape
  StagedLayer staged;  // the most recent config only
  bool warm_l2 = false;  // --warm_l2: no flush before a timed build (a diagnostic: cold vs warm)
  bool warm_code = false;  // --warm_code: the build's code warmed after the flush (a diagnostic)
  bool shape_sweep = false;  // --shape_sweep: every compiled launch shape on the target cases
  // --programmatic_launch: the timed builds launched as the Python package and the step
  // launch them (programmatic dependent launch) instead of plainly, as the peer is.
  bool programmatic_launch = false;
  // --no_gathered_lookups: every build on the default kernels (no gathered-lookups kernel for
  // C128A after long context), the other half of a same-binary A/B.
  bool gathered_lookups = true;
  int64_t head_start_ns = kHeadStartNs;  // --head_start_us: the spin between the flush and the timed launch
  std::unique_ptr<StreamingBytes> streaming;  // the byte floors' kernel and buffers
  void tear_down() {
    staged = StagedLayer{};
    builders.clear();
    streaming.reset();
    copy_buffers.reset();
  }
};
Run& run() {
  static Run r;
  return r;
}

opt::MixedSparseIndicesBuilder& builder(opt::Backend backend, kernels::LaunchShape shape = {}) {
  const std::string name = std::string(timing_prefix(backend)) + "/" +
                           std::to_string(shape.group_threads) + "x" + std::to_string(shape.chunks);
  auto& b = run().builders[name];
  if (!b && backend == opt::Backend::kCuda) {
    // One build timed alone, launched plainly (as the peer is): programmatic launch only
    // overlaps a build with the kernel before it, which here is the L2 flush.
    opt::CudaBuilderOptions options;
    options.forced_shape = shape;
    options.programmatic_launch = run().programmatic_launch;
    options.gathered_lookups = run().gathered_lookups;
    b = opt::make_cuda_builder(cuda_stream(backend), options);
  }
  if (!b) b = make_builder(backend, cuda_stream(backend));
  return *b;
}
opt::MixedSparseIndicesBuilder& builder(const KernelConfig& cfg) { return builder(cfg.backend, cfg.shape); }

// Writes the staged step's token plan once, untimed, for the planned configs (with the
// backend's policy builder; synchronized).
void write_token_plan(const KernelConfig& cfg, StagedLayer& s) {
  if (s.token_plan.data() != nullptr) return;
  s.token_plan = opt::BackendBuffer(cfg.backend, static_cast<size_t>(s.request.num_tokens) * sizeof(opt::TokenPlanEntry));
  opt::BuildRequest writer = s.request;
  writer.write_token_plan = true;
  writer.output.token_plan = static_cast<opt::TokenPlanEntry*>(s.token_plan.data());
  opt::MixedSparseIndicesBuilder& b = builder(cfg.backend);
  (void)b.build(writer);
  (void)b.take_content_errors();  // (synchronizes: the plan is written)
  b.release_outputs();
}

// The request cfg times: the staged one, reading the plan when cfg is planned.
opt::BuildRequest timed_request(const KernelConfig& cfg, const StagedLayer& s) {
  opt::BuildRequest r = s.request;
  if (cfg.planned) r.token_plan = static_cast<const opt::TokenPlanEntry*>(s.token_plan.data());
  return r;
}

// Builds once with cfg's builder and compares with the reference (once per config key).
void verify(const KernelConfig& cfg, StagedLayer& s) {
  if (!s.error.empty() || s.verified.count(cfg.key()) > 0) return;
  opt::MixedSparseIndicesBuilder& b = builder(cfg);
  try {
    const opt::BuiltIndices built = b.build(timed_request(cfg, s));
    s.width = built.width;
    const harness::HostIndices got = harness::download(cfg.backend, built);
    const int64_t errors = b.take_content_errors();
    b.release_outputs();
    harness::Mismatch where;
    where.backend = timing_prefix(cfg.backend);
    where.window = s.request.window;
    const std::vector<harness::Mismatch> found =
        harness::compare_build(s.want, got, errors, s.request.num_decode_tokens, where);
    if (!found.empty()) s.error = cfg.key() + " disagrees with the reference: " + harness::format_mismatch(found[0]);
  } catch (const std::exception& e) {
    s.error = cfg.key() + ": build failed: " + e.what();
    try {
      b.release_outputs();
    } catch (const std::exception&) {
      // already reported by the build error
    }
  }
  if (s.error.empty()) s.verified.insert(cfg.key());
}

// The lookup floor's table size for a build: the widest block-table row its translated
// inputs can name (its requests' compressed positions, ceil(seq_len / ratio), in blocks),
// rounded up to a power of two. (Not capped here: a case too wide for the floor's table skips
// that floor only, in BM_byte_floor, and keeps its other benchmarks.)
int64_t lookup_floor_entries(const ref::BuilderInputs& in) {
  const ref::PagedCache& cache = in.compressed ? *in.compressed : in.swa;
  int64_t widest = 1;
  for (Eigen::Index r = 0; r < in.seq_lens.size(); ++r) {
    const int64_t positions = (int64_t{in.seq_lens(r)} + in.ratio - 1) / in.ratio;
    widest = std::max(widest, (positions + cache.block_size - 1) / cache.block_size);
  }
  int64_t entries = 1;
  while (entries < widest) entries *= 2;
  return entries;
}

StagedLayer& staged_layer(const KernelConfig& cfg) {
  StagedLayer& current = run().staged;
  if (current.key != cfg.staging_key()) {
    current = StagedLayer{};
    current.key = cfg.staging_key();
    try {
      const ref::ModelSchedule schedule =
          single_layer_schedule(model_schedule(cfg.model), cfg.kind);
      const harness::StepShape& shape = bench_case(cfg.case_name).shape;
      current.staged = stage_step(cfg.backend, shape, schedule, /*keep_host=*/true);
      const StagedStep& s = *current.staged;
      const ref::BuilderInputs ref_inputs = bench_layer_inputs(s.step, schedule, s.c4a_per_layer, 0);
      current.request = opt::layer_build_request(s.staged->inputs(), schedule.compress_ratios[0],
                                                 s.staged->c4a(0));
      opt::validate_step_structure(current.request, s.staged->inputs().host);
      opt::validate_request_shape(current.request);
      current.bytes = build_bytes(ref_inputs);
      current.lookup_entries = lookup_floor_entries(ref_inputs);
      current.want = ref::build_mixed_sparse_indices(ref_inputs);
      if (run().warm_code && cfg.backend == opt::Backend::kCuda && shape.num_decodes == 0) {
        harness::StepShape small = shape;
        small.num_prefills = 1;
        small.prefill_tokens_each = std::min(kWarmCodeTokens, shape.prefill_tokens_each);
        current.code_warmer = stage_step(cfg.backend, small, schedule, /*keep_host=*/false);
        current.code_warmer_request = opt::layer_build_request(
            current.code_warmer->staged->inputs(), schedule.compress_ratios[0], current.code_warmer->staged->c4a(0));
      }
    } catch (const std::exception& e) {
      current.error = cfg.key() + ": staging failed: " + e.what();
      return current;
    }
  }
  if (cfg.planned && current.error.empty()) {  // the plan its builds read, once per staged case
    try {
      write_token_plan(cfg, current);
    } catch (const std::exception& e) {
      current.error = cfg.key() + ": writing the token plan failed: " + e.what();
      return current;
    }
  }
  verify(cfg, current);
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
  opt::MixedSparseIndicesBuilder& b = builder(cfg);
  const bool cuda = cfg.backend == opt::Backend::kCuda;
  std::unique_ptr<EventTimer> timer;
  if (cuda) timer = std::make_unique<EventTimer>();
  void* stream = cuda_stream(cfg.backend);
  double device_total = 0, host_total = 0;
  int64_t n = 0;
  bool failed = false;
  const opt::BuildRequest request = timed_request(cfg, s);
  // --warm_code: the warming build takes the timed build's kernel and launch shape (the
  // policy's for these prefill-only rows), from a builder of its own (its own outputs). Not for
  // forced shapes, whose builder is the warmer's.
  opt::MixedSparseIndicesBuilder* warmer = nullptr;
  if (s.code_warmer != nullptr && cfg.shape.group_threads == 0) {
    warmer = &builder(cfg.backend, kernels::choose_launch_shape(request.num_tokens, s.width / 4,
                                                                bench_device().gpu.sm_count));
  }
  for (auto _ : state) {
    try {
      if (cuda) {
        if (!run().warm_l2) bench_device().flusher->flush(stream);
        if (warmer != nullptr) {
          (void)warmer->build(s.code_warmer_request);
          warmer->release_outputs();
        }
        gpu_busy_wait_ns(stream, run().head_start_ns);
        timer->start(stream);
      }
      const double t0 = now_us();
      const opt::BuiltIndices built = b.build(request);
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

// The launch floors, timed exactly as BM_kernel times a build: an empty kernel (with and
// without a builder-sized argument), and one thread's chain of `hops` dependent DRAM reads.
// `size`: the dependent reads' hops, or the sized argument's bytes.
enum class Floor { kEmpty, kEmptyProgrammatic, kEmptyDriver, kEmptyArgs, kEmptySizedArgs, kDependentReads };
void BM_launch_floor(benchmark::State& state, Floor floor, int size) {
  const int hops = size, bytes = size;
  const std::string name = floor == Floor::kEmpty               ? "cuda/launch_floor/empty_kernel"
                           : floor == Floor::kEmptyProgrammatic ? "cuda/launch_floor/empty_kernel_programmatic"
                           : floor == Floor::kEmptyDriver       ? "cuda/launch_floor/empty_kernel_driver_programmatic"
                           : floor == Floor::kEmptyArgs         ? "cuda/launch_floor/empty_kernel_args"
                           : floor == Floor::kEmptySizedArgs    ? "cuda/launch_floor/arg_bytes/" + std::to_string(bytes)
                                                                : "cuda/launch_floor/dependent_reads_" +
                                                                      std::to_string(hops);
  void* stream = bench_device().stream->get();
  const LaunchFloorArgs args{};
  std::unique_ptr<DependentReadChain> chain;
  auto launch = [&] {
    switch (floor) {
      case Floor::kEmpty: launch_empty_kernel(stream); break;
      case Floor::kEmptyProgrammatic: launch_empty_kernel_programmatic(stream); break;
      case Floor::kEmptyDriver: launch_empty_kernel_driver_programmatic(stream); break;
      case Floor::kEmptyArgs: launch_empty_kernel_args(stream, args); break;
      case Floor::kEmptySizedArgs: launch_empty_kernel_sized_args(stream, bytes); break;
      case Floor::kDependentReads: chain->launch(stream, hops); break;
    }
  };
  double device_total = 0, host_total = 0;
  int64_t n = 0;
  try {
    if (floor == Floor::kDependentReads) chain = std::make_unique<DependentReadChain>();
    EventTimer timer;
    // Warm-up: module load and first-launch costs stay out of the numbers.
    launch();
    bench_device().stream->synchronize();
    for (auto _ : state) {
      bench_device().flusher->flush(stream);
      gpu_busy_wait_ns(stream, run().head_start_ns);
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
    if (chain && chain->last_value() != hops * 1024) {
      state.SkipWithError((name + ": the read chain ended at the wrong element").c_str());
      return;
    }
  } catch (const std::exception& e) {
    state.SkipWithError((name + ": " + e.what()).c_str());
    return;
  }
  if (n == 0) return;
  state.counters["device_us"] = device_total / static_cast<double>(n);
  state.counters["host_us"] = host_total / static_cast<double>(n);
  state.counters["arg_bytes"] = floor == Floor::kEmptyArgs        ? static_cast<double>(sizeof(LaunchFloorArgs))
                                : floor == Floor::kEmptySizedArgs ? static_cast<double>(bytes)
                                                                  : 0.0;
  state.SetLabel(floor == Floor::kEmptyArgs ? "empty kernel, by-value argument of sizeof(MixedSparseIndicesArgs); "
                                              "CUDA events, L2 flushed"
                 : floor == Floor::kEmptySizedArgs
                     ? "empty kernel, zeroed by-value argument of arg_bytes, cudaLaunchKernelEx (programmatic); CUDA "
                       "events, L2 flushed"
                 : floor == Floor::kEmpty   ? "empty kernel, 1 CTA x 32 threads; CUDA events, L2 flushed"
                 : floor == Floor::kEmptyProgrammatic
                     ? "empty kernel, cudaLaunchKernelEx with programmatic stream serialization; CUDA events, L2 flushed"
                                            : "1 thread, dependent reads 4 KiB apart, then a store; CUDA "
                                              "events, L2 flushed");
}

// The byte floor of a case, measured: StreamingBytes moving the build's bytes (build_bytes.h:
// inputs read, outputs written), timed exactly as BM_kernel times the build, each iteration
// once per shape (StreamingBytes::kShapes). device_us is the fastest shape's mean (us_<shape>
// each, e.g. us_w1t256). hops > 0:
// the chain floor, every write after that many dependent reads (StreamingBytes).
void BM_byte_floor(benchmark::State& state, KernelConfig cfg, int hops) {
  StagedLayer& s = staged_layer(cfg);
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const int64_t writes = s.bytes.outputs, reads = s.bytes.total() - s.bytes.outputs;
  const bool translates = hops >= StreamingBytes::kTranslated;
  const int64_t translated = translates ? s.bytes.translated_inputs : 0;
  if (translates && translated == 0) {  // registration's rule disagrees with the bytes
    state.SkipWithError("a translated floor for a build that translates no input (BuildBytes::translated_inputs = 0)");
    return;
  }
  if (hops == StreamingBytes::kLookups && s.lookup_entries > StreamingBytes::kMaxLookupEntries) {
    state.SkipWithError(("lookup floor: a table of " + std::to_string(s.lookup_entries) + " entries, above " +
                         std::to_string(StreamingBytes::kMaxLookupEntries))
                            .c_str());
    return;
  }
  const auto lookup_entries = static_cast<int32_t>(s.lookup_entries);
  // The chain floor's rows: the build's, in 16-byte words of output.
  const int64_t row_words = row_words_of(writes, s.request.num_tokens);
  constexpr int kChoices = static_cast<int>(std::size(StreamingBytes::kShapes));
  double totals[kChoices] = {};
  int64_t n = 0;
  try {
    if (!run().streaming) run().streaming = std::make_unique<StreamingBytes>();
    StreamingBytes& streaming = *run().streaming;
    streaming.reserve(reads, writes);
    void* stream = bench_device().stream->get();
    EventTimer timer;
    for (int c = 0; c < kChoices; ++c) {
      streaming.launch(stream, reads, writes, StreamingBytes::kShapes[c], hops, row_words, translated,
                       lookup_entries);  // warm-up
    }
    bench_device().stream->synchronize();
    for (auto _ : state) {
      double fastest = 0;
      for (int c = 0; c < kChoices; ++c) {
        bench_device().flusher->flush(stream);
        gpu_busy_wait_ns(stream, run().head_start_ns);
        timer.start(stream);
        streaming.launch(stream, reads, writes, StreamingBytes::kShapes[c], hops, row_words, translated,
                         lookup_entries);
        timer.stop(stream);
        const double us = timer.elapsed_us();
        totals[c] += us;
        fastest = c == 0 ? us : std::min(fastest, us);
      }
      state.SetIterationTime(fastest * 1e-6);
      ++n;
    }
  } catch (const std::exception& e) {
    state.SkipWithError((cfg.key() + ": byte floor: " + e.what()).c_str());
    return;
  }
  if (n == 0) return;
  double best = 0;
  for (int c = 0; c < kChoices; ++c) {
    const double mean = totals[c] / static_cast<double>(n);
    state.counters["us_" + StreamingBytes::kShapes[c].name()] = mean;
    best = c == 0 ? mean : std::min(best, mean);
  }
  state.counters["device_us"] = best;
  state.counters["bytes"] = static_cast<double>(reads + writes);
  state.counters["read_bytes"] = static_cast<double>(reads);
  state.counters["GBps"] = static_cast<double>(reads + writes) / (best * 1e-6) / 1e9;
  state.counters["hops"] = hops;
  state.counters["translated_bytes"] = static_cast<double>(translated);
  if (hops == StreamingBytes::kLookups) state.counters["lookup_entries"] = static_cast<double>(lookup_entries);
  const std::string chain = hops >= 2 ? "2" : std::to_string(hops);
  state.SetLabel(hops == 0 ? "streaming kernel moving the build's bytes (16-byte words, fastest of 1/2/4 per "
                             "thread in CTAs of 256 or 32); CUDA events, L2 flushed"
                           : "the same, each thread's writes after " + chain +
                                 " dependent read(s) (an 8-byte plan entry a row of the build's width, read first" +
                                 (hops >= 2 ? ", then a table entry" : "") + ")" +
                                 (hops == StreamingBytes::kTranslated
                                      ? ", and each translated input word's after a table entry it names"
                                  : hops == StreamingBytes::kLookups
                                      ? ", and each translated input value's after a table entry it names (tables "
                                        "of the build's block-table row)"
                                      : "") +
                                 "; CUDA events, L2 flushed");
}

// The copy ceiling as its own benchmark: each iteration one timed 1 GiB D2D copy, between the
// buffers the start-up measurement used.
void BM_copy_bw(benchmark::State& state) {
  if (!run().copy_buffers) {
    state.SkipWithError("copy_bw: no copy buffers (the start-up measurement did not run)");
    return;
  }
  CopyBuffers& buffers = *run().copy_buffers;
  const size_t bytes = buffers.bytes();
  double total_us = 0;
  int64_t n = 0;
  for (auto _ : state) {
    try {
      const CopyBandwidth c = buffers.measure(1, bench_device().stream->get(), 0);
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
  opt::MixedSparseIndicesBuilder& b = builder(cfg);
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

void BM_step_check(benchmark::State& state, KernelConfig cfg) {
  StagedLayer& s = staged_layer(cfg);
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const opt::StepInputs& step = s.staged->staged->inputs();
  const std::string error = opt::step_inputs_error(step);
  if (!error.empty()) {
    state.SkipWithError((cfg.key() + ": the staged step is invalid: " + error).c_str());
    return;
  }
  const double t0 = now_us();
  for (auto _ : state) keep(opt::step_inputs_error(step).size());
  state.counters["host_us"] = (now_us() - t0) / static_cast<double>(state.iterations());
  state.counters["tokens"] = step.num_tokens;
  state.SetLabel("step_inputs_error (StepIndexer's check) on the host copies");
}

// The issue-8 target cases, timed with every compiled launch shape (--shape_sweep).
void register_shape_sweep() {
  const std::tuple<const char*, ref::LayerKind, const char*> cases[] = {
      {"flash", ref::LayerKind::kSwaOnly, "prefill8K"},
      {"flash", ref::LayerKind::kSwaOnly, "decode64_ctx8K"},
      {"flash", ref::LayerKind::kC4A, "prefill8K"},
      {"flash", ref::LayerKind::kC4A, "prefill8K_ctx120K"},
      {"pro", ref::LayerKind::kC4A, "prefill8K"},
      {"flash", ref::LayerKind::kC4A, "decode64_ctx8K"},
      {"flash", ref::LayerKind::kC128A, "prefill8K"},
      {"flash", ref::LayerKind::kC128A, "prefill8K_ctx120K"},
      {"flash", ref::LayerKind::kC4A, "prefill1K"},
      {"flash", ref::LayerKind::kSwaOnly, "prefill1K"},
      {"pro", ref::LayerKind::kC4A, "decode64_ctx8K"}};
  for (const auto& [model, kind, case_name] : cases) {
    for (int32_t group = kernels::MixedSparseIndicesPolicy::kMinGroupThreads;
         group <= kernels::MixedSparseIndicesPolicy::kCtaThreads; group *= 2) {
      for (int32_t chunks : kernels::MixedSparseIndicesPolicy::kChunkChoices) {
        const KernelConfig cfg{opt::Backend::kCuda, model, kind, case_name, kernels::LaunchShape{group, chunks}};
        benchmark::RegisterBenchmark(("cuda/shape/" + cfg.shape_name() + "/" + model + "/" +
                                      ref::layer_kind_name(kind) + "/" + case_name)
                                         .c_str(),
                                     BM_kernel, cfg)
            ->UseManualTime()
            ->Iterations(kCudaIterations)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
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
      const std::pair<std::string, std::pair<Floor, int>> floors[] = {
          {"empty_kernel", {Floor::kEmpty, 0}},
          {"empty_kernel_programmatic", {Floor::kEmptyProgrammatic, 0}},
          {"empty_kernel_driver_programmatic", {Floor::kEmptyDriver, 0}},
          {"empty_kernel_args", {Floor::kEmptyArgs, 0}},
          {"dependent_reads_1", {Floor::kDependentReads, 1}},
          {"dependent_reads_2", {Floor::kDependentReads, 2}}};
      for (const auto& [name, floor] : floors) {
        benchmark::RegisterBenchmark((prefix + "/launch_floor/" + name).c_str(), BM_launch_floor,
                                     floor.first, floor.second)
            ->UseManualTime()
            ->Iterations(kCudaIterations)
            ->Unit(benchmark::kMicrosecond);
      }
      for (int bytes : kLaunchFloorArgBytes) {
        benchmark::RegisterBenchmark((prefix + "/launch_floor/arg_bytes/" + std::to_string(bytes)).c_str(),
                                     BM_launch_floor, Floor::kEmptySizedArgs, bytes)
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
    for (const BenchCase& c : bench_cases()) {
      const KernelConfig cfg{backend, "flash", ref::LayerKind::kSwaOnly, c.name};
      benchmark::RegisterBenchmark((prefix + "/step_check/" + c.name).c_str(), BM_step_check, cfg)->MinTime(0.02);
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
          if (cuda && c.has_prefill_rows()) {  // right after its build: the staged case is reused
            KernelConfig planned = cfg;
            planned.planned = true;
            benchmark::RegisterBenchmark((prefix + "/kernel_planned/" + model + "/" + ref::layer_kind_name(kind) +
                                          "/" + c.name)
                                             .c_str(),
                                         BM_kernel, planned)
                ->UseManualTime()
                ->Iterations(kCudaIterations)
                ->Unit(benchmark::kMicrosecond);
          }
          if (cuda) {  // right after its build: the staged case is reused
            benchmark::RegisterBenchmark((prefix + "/byte_floor/" + model + "/" + ref::layer_kind_name(kind) +
                                          "/" + c.name)
                                             .c_str(),
                                         BM_byte_floor, cfg, 0)
                ->UseManualTime()
                ->Iterations(kByteFloorIterations)
                ->Unit(benchmark::kMicrosecond);
          }
          // The chain floors: a prefill row's writes wait on its plan entry (-> a block-table
          // entry), a local-form decode row's on its input (-> a block-table entry).
          // The translated floor: where the build translates inputs (BuildBytes::translated_inputs):
          // C4A's top-k and local-form decode rows, C128A's prefill rows.
          const bool translates =
              kind == ref::LayerKind::kC4A || (kind == ref::LayerKind::kC128A && c.has_prefill_rows());
          // The lookup floor: C4A's picks, a table entry each (C128A's positions run four to a
          // block, one entry a word).
          for (int hops = 1; cuda && hops <= StreamingBytes::kMaxHops; ++hops) {
            const bool translated = hops == StreamingBytes::kTranslated, lookups = hops == StreamingBytes::kLookups;
            if ((translated && !translates) || (lookups && kind != ref::LayerKind::kC4A)) continue;
            const std::string floor = translated ? "/translated_floor/"
                                      : lookups  ? "/lookup_floor/"
                                                 : "/chain_floor/" + std::to_string(hops) + "/";
            benchmark::RegisterBenchmark((prefix + floor +
                                          model + "/" + ref::layer_kind_name(kind) + "/" + c.name)
                                             .c_str(),
                                         BM_byte_floor, cfg, hops)
                ->UseManualTime()
                ->Iterations(kByteFloorIterations)
                ->Unit(benchmark::kMicrosecond);
          }
        }
      }
    }
  }
}

}  // namespace

BenchProgram bench_program() {
  BenchProgram p;
  p.name = "kernel_bench";
  p.take_flags = [](int* argc, char** argv) {
    run().shape_sweep = take_flag(argc, argv, "--shape_sweep");
    run().warm_l2 = take_flag(argc, argv, "--warm_l2");
    run().warm_code = take_flag(argc, argv, "--warm_code");
    run().programmatic_launch = take_flag(argc, argv, "--programmatic_launch");
    run().gathered_lookups = !take_flag(argc, argv, "--no_gathered_lookups");
    run().head_start_ns = take_int_option(argc, argv, "--head_start_us=", 1, 100000).value_or(kHeadStartNs / 1000) * 1000;
  };
  p.start = [](const BackendChoice& backends) {
    Run& r = run();
    if (backends.host && backends.cuda) std::printf("kernel_bench: cpu/ benchmarks are CPU timings\n");
    if (!backends.cuda) {
      std::printf("kernel_bench: launch_floor benchmarks need the CUDA backend: not registered\n");
    }
    benchmark::AddCustomContext("dsv4_programmatic_launch", r.programmatic_launch ? "on" : "off");
    benchmark::AddCustomContext("dsv4_gathered_lookups", r.gathered_lookups ? "on" : "off");
    benchmark::AddCustomContext("dsv4_head_start_us", std::to_string(r.head_start_ns / 1000));
    if (r.warm_l2) {
      std::printf("kernel_bench: --warm_l2: builds are timed WITHOUT an L2 flush (diagnostic only)\n");
      benchmark::AddCustomContext("dsv4_warm_l2", "true");
    }
    if (r.warm_code) {
      std::printf("kernel_bench: --warm_code: each prefill-only build's code warmed after the flush (diagnostic only)\n");
      benchmark::AddCustomContext("dsv4_warm_code", "true");
    }
    if (backends.cuda) {
      const L2Flusher& flusher = *bench_device().flusher;
      r.copy_buffers = std::make_unique<CopyBuffers>(size_t{1} << 30);
      r.copy = r.copy_buffers->measure(9, bench_device().stream->get());
      std::printf("kernel_bench: D2D copy bandwidth (1 GiB, read+write, median of %zu) = %.1f GB/s "
                  "(min %.1f, max %.1f); L2 flush reads %zu MiB\n",
                  r.copy.samples_us.size(), r.copy.median_gbps, r.copy.min_gbps, r.copy.max_gbps,
                  flusher.bytes() >> 20);
      benchmark::AddCustomContext("dsv4_copy_bw_GBps", std::to_string(r.copy.median_gbps));
    }
  };
  p.register_benchmarks = [](const BackendChoice& backends) {
    register_benchmarks(backends);
    if (run().shape_sweep && backends.cuda) register_shape_sweep();
  };
  p.tear_down = [] { run().tear_down(); };
  return p;
}

}  // namespace dsv4::bench
