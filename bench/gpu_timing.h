// Device-side timing tools of the benchmarks: CUDA streams and events, an L2 flush, the
// device-to-device copy bandwidth ceiling and two calibrated stand-ins for "the rest of a
// layer" (a busy-wait kernel and an L2-evicting streaming kernel). Declared in every build;
// without CUDA compiled in (gpu_timing_host.cpp) gpu_info().present is false and every device
// tool throws std::runtime_error (the calibration fit is plain C++ and works everywhere).
// Every CUDA call is checked: a failure throws std::runtime_error naming the call, the
// file:line and the CUDA error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/decode_chunk_args.h"
#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/multi_build.h"
#include "kernels/prefill_rows_args.h"

namespace dsv4::bench {

struct GpuInfo {
  bool present = false;   // CUDA compiled in and a device visible
  std::string why_absent;  // when !present
  std::string name;
  int compute_major = 0, compute_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  int driver_version = 0;   // cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;  // cudaRuntimeGetVersion
};
GpuInfo gpu_info();  // device 0; never throws
std::string cuda_version_string(int version);  // 13000 -> "13.0"

// A non-blocking CUDA stream owned by the benchmark.
class GpuStream {
 public:
  GpuStream();
  ~GpuStream();
  GpuStream(const GpuStream&) = delete;
  GpuStream& operator=(const GpuStream&) = delete;
  void* get() const { return stream_; }  // cudaStream_t
  void synchronize();

 private:
  void* stream_ = nullptr;
};

// A pair of CUDA events: start/stop recorded on a stream, elapsed time in microseconds.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(void* stream);
  void stop(void* stream);
  double elapsed_us();  // waits for the stop event

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

// An event the host waits on: recorded after the last piece of work, its wait ends an
// end-to-end wall time (timing disabled: what an engine would use to wait).
class CompletionEvent {
 public:
  CompletionEvent();
  ~CompletionEvent();
  CompletionEvent(const CompletionEvent&) = delete;
  CompletionEvent& operator=(const CompletionEvent&) = delete;
  void record(void* stream);
  void wait();  // cudaEventSynchronize

 private:
  void* event_ = nullptr;
};

// Evicts the L2 by READING a buffer on the stream: `bytes`, or with 0 max(2 x L2 size, 64 MiB).
// Reading, not writing: a written flush buffer leaves the L2 full of dirty lines whose
// write-back would be charged to the next kernel (up to 60 MB of extra DRAM writes on an H200).
// The size did not move the builds on an H100: 100, 512 and 1024 MiB timed them alike
// (bench/results/2026-12-07-flush-size-probe/).
class L2Flusher {
 public:
  explicit L2Flusher(size_t bytes = 0);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(void* stream);
  size_t bytes() const { return bytes_; }

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  void* sink_ = nullptr;  // keeps the reads alive; written only if the XOR hits a magic value
  unsigned blocks_ = 0;   // 4 CTAs per SM
};

// Timed device-to-device copies; GB/s counts bytes read + written (2 x bytes). The ceiling for
// a memory-bound build.
struct CopyBandwidth {
  size_t bytes = 0;
  double median_gbps = 0, min_gbps = 0, max_gbps = 0;
  double median_us = 0;
  std::vector<double> samples_us;
};

// A source and a destination of `bytes` each, allocated once, for cudaMemcpyAsync
// device-to-device copies. A benchmark program keeps one for its whole run: on an H100, copies
// ran ~14 % slower while GiB-sized pairs were being freed and reallocated, and back at full
// speed only a few copies after that stopped (bench/results/2026-12-06-h100-copy-bandwidth-probe/);
// a copy_bw benchmark that reallocated its pair for every copy read 12-14 % below the run's
// start-up figure.
class CopyBuffers {
 public:
  explicit CopyBuffers(size_t bytes);
  ~CopyBuffers();
  CopyBuffers(const CopyBuffers&) = delete;
  CopyBuffers& operator=(const CopyBuffers&) = delete;
  // `reps` (>= 1) timed copies on the stream after `warmups` untimed ones.
  CopyBandwidth measure(int reps, void* stream, int warmups = 2);
  size_t bytes() const { return bytes_; }

 private:
  void* src_ = nullptr;
  void* dst_ = nullptr;
  size_t bytes_ = 0;
};

// Launches one thread that spins on %globaltimer for `ns` nanoseconds (at most 1 s) on the
// stream. The "rest of the layer" of the TTFT simulation and the benchmarks' head start.
void gpu_busy_wait_ns(void* stream, int64_t ns);

// Measured duration of a stand-in as a function of the requested one:
// measured_us = offset_us + slope * requested_us, fitted by least squares over the points of
// fit_from_us and up (medians of a few samples each); request_for() inverts it. The same
// struct serves the GPU busy-wait, the GPU streaming kernel and their CPU stand-ins.
struct DurationCalibration {
  struct Point {
    double requested_us = 0, measured_us = 0;
  };
  std::vector<Point> points;
  double offset_us = 0, slope = 1;
  // The shortest the stand-in takes: measured for a request of 0 (one launch for the
  // busy-wait, one full pass over its buffer for the streaming kernel).
  double shortest_us = 0;
  // Points below this were left out of the fit: max(10 us, 1.25 x shortest_us), so a
  // streaming kernel's one-pass floor does not bend the line.
  double fit_from_us = 10;
  int samples = 0;             // measurements per point (the point is their median)
  int fit_points = 0;          // points the fit used (< 2: offset 0, slope 1)
  bool fit_plausible = true;   // false: the fitted slope was outside 0.5..2, offset 0, slope 1 kept
  double globaltimer_tick_ns = 0;  // GPU only: smallest nonzero %globaltimer step seen

  // The request that the fit says takes `us` (0 for us <= 0; never negative).
  double request_for(double us) const;
};

// Fits offset_us and slope by least squares over the points of fit_from_us and up. Returns
// false, leaving offset 0 and slope 1, when the fitted slope is implausible (outside 0.5..2);
// fewer than two points also leave offset 0 and slope 1 (and return true).
bool fit_duration_line(DurationCalibration& calibration);
// Calls measure_us(requested) `samples` times per requested duration (the first must be 0),
// keeps the medians, sets shortest_us and fit_from_us and fits the line. Used by every
// stand-in, GPU and CPU, so both stand-ins of a run are calibrated the same way.
DurationCalibration calibrate_durations(const std::vector<double>& requested_us, int samples,
                                        const std::function<double(double)>& measure_us);

// Requests the busy-wait calibration uses (us).
const std::vector<double>& busy_wait_calibration_points();
// Requests the streaming calibrations use (us): more points above a ~50 us pass.
const std::vector<double>& streaming_calibration_points();

DurationCalibration calibrate_busy_wait(void* stream);
// A busy-wait that the calibration says takes `us` on the stream (no launch for us <= 0).
void gpu_busy_wait_us(void* stream, const DurationCalibration& calibration, double us);

// The streaming stand-in for the rest of a layer: one kernel that reads and writes (16-byte
// load, +1, store) a device buffer of max(2 x L2 size, 64 MiB), first one full pass over the
// whole buffer and then on around it until %globaltimer says `ns` have passed since the
// kernel started. So it always evicts the L2 (unlike the busy-wait, which touches no memory
// and leaves the builder's inputs cached from one layer to the next), leaves dirty lines
// behind as a real layer's writes would, and takes max(ns, one pass) plus launch overhead.
// One wave of CTAs (occupancy-sized, all resident), so every CTA starts at launch.
class StreamingWait {
 public:
  StreamingWait();  // allocates and initialises the buffer; throws without a device
  ~StreamingWait();
  StreamingWait(const StreamingWait&) = delete;
  StreamingWait& operator=(const StreamingWait&) = delete;
  void run_ns(void* stream, int64_t ns);  // ns in [0, 1e9]; 0: exactly one pass
  size_t bytes() const { return bytes_; }
  int64_t l2_bytes() const { return l2_bytes_; }
  unsigned blocks() const { return blocks_; }
  unsigned threads() const { return threads_; }

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  int64_t l2_bytes_ = 0;
  unsigned blocks_ = 0, threads_ = 0;
};
// Event-measured calibration of the streaming kernel (shortest_us = one pass).
DurationCalibration calibrate_streaming_wait(StreamingWait& wait, void* stream);
// A streaming kernel that the calibration says takes `us` (no launch for us <= 0; at least
// one pass, so requests below shortest_us take shortest_us).
void gpu_streaming_wait_us(void* stream, StreamingWait& wait, const DurationCalibration& calibration,
                           double us);

// Event-measured duration (us) of whatever `enqueue` puts on the stream: median of `samples`.
double measure_on_stream_us(void* stream, int samples, const std::function<void()>& enqueue);

// The launch floor: an empty kernel (1 CTA of 32 threads) launched the way the builder
// launches its kernel, cudaLaunchKernel then cudaGetLastError, both checked.
void launch_empty_kernel(void* stream);
// The same launched through the runtime with programmatic dependent launch on
// (cudaLaunchKernelEx, programmatic stream serialization), as the builder launched before
// ea831b8: the host cost of that attribute.
void launch_empty_kernel_programmatic(void* stream);
// The same launched exactly as the builds are (kernels::launch_build_kernel: the driver's
// cuLaunchKernelEx with the kernel's CUfunction looked up once, since ea831b8), programmatic:
// beside launch_empty_kernel_programmatic (the runtime's cudaLaunchKernelExC), what the
// runtime's own work per launch (function lookup, context and stream checks,
// cudaGetLastError) costs the host, and the launch floor of a build() call's host time.
void launch_empty_kernel_driver_programmatic(void* stream);
// The same with a by-value argument as large (and aligned) as the builder's, so the
// difference shows the cost of copying the parameters.
struct LaunchFloorArgs {
  alignas(kernels::MixedSparseIndicesArgs) char bytes[sizeof(kernels::MixedSparseIndicesArgs)];
};
static_assert(sizeof(LaunchFloorArgs) == sizeof(kernels::MixedSparseIndicesArgs),
              "the floor's argument must be as large as the builder's");
void launch_empty_kernel_args(void* stream, const LaunchFloorArgs& args);
// The same with a zeroed by-value argument of each size the builder's launches use (and more
// between), launched through the runtime with the builder's attribute (cudaLaunchKernelExC,
// programmatic): what the argument's size costs a launch, as a curve (a decode build's DecodeChunkArgs, a prefill build's
// PrefillRowsArgs, the group kernel's MixedSparseIndicesArgs, the one-launch kernel's
// MultiBuildArgs). The H200 runs of 2026-12-03 put a ~0.22 us step between 160 and 368 bytes;
// 224-320 say where, and so how short a mixed build's argument would have to be.
inline constexpr int kLaunchFloorArgBytes[] = {64,
                                               static_cast<int>(sizeof(kernels::DecodeChunkArgs)),
                                               static_cast<int>(sizeof(kernels::PrefillRowsArgs)),
                                               224,
                                               256,
                                               288,
                                               320,
                                               static_cast<int>(sizeof(kernels::MixedSparseIndicesArgs)),
                                               768,
                                               static_cast<int>(sizeof(kernels::MultiBuildArgs))};
constexpr bool strictly_increasing(const int* v, size_t n) {
  return n < 2 || (v[0] < v[1] && strictly_increasing(v + 1, n - 1));
}
static_assert(strictly_increasing(kLaunchFloorArgBytes, sizeof(kLaunchFloorArgBytes) / sizeof(int)),
              "one benchmark per size, in order (a size of the builder's equal to another: drop the other)");
// bytes: one of kLaunchFloorArgBytes (else std::invalid_argument).
void launch_empty_kernel_sized_args(void* stream, int bytes);

// The latency floor of a small build: one thread following `hops` dependent reads through a
// device buffer (each in another 4 KiB page, so after an L2 flush each is a DRAM round trip),
// then one store, launched like the builder. A decode build needs at least one such read
// (its input rows) and a local-form decode build two (input, then block table).
class DependentReadChain {
 public:
  static constexpr int kMaxHops = 4;
  DependentReadChain();
  ~DependentReadChain();
  DependentReadChain(const DependentReadChain&) = delete;
  DependentReadChain& operator=(const DependentReadChain&) = delete;
  void launch(void* stream, int hops);  // 1 <= hops <= kMaxHops
  int32_t last_value();                 // synchronizes; the chain's end (checks the reads ran)

 private:
  int32_t* chain_ = nullptr;  // device: kMaxHops + 1 pages of int32
  int32_t* out_ = nullptr;
};

// The floor of a replayed step graph: `nodes` launches of a kernel that does what every build
// does around its work (griddepcontrol wait / launch_dependents, one store per CTA) after
// `hops` dependent reads (0-2: the first from a page of the node's own, a DRAM round trip
// after an L2 flush, like a C4A layer's own indexer output; the second from a page all nodes
// share, like the block table), `ctas` CTAs of 128 threads, captured from `stream` into one
// graph with or without programmatic dependent launch, as StepGraph records its builds.
class LaunchFloorGraph {
 public:
  LaunchFloorGraph(void* stream, int nodes, int ctas, int hops, bool programmatic_launch);
  ~LaunchFloorGraph();
  LaunchFloorGraph(const LaunchFloorGraph&) = delete;
  LaunchFloorGraph& operator=(const LaunchFloorGraph&) = delete;
  void replay();  // one cudaGraphLaunch on the stream

 private:
  void* stream_;
  void* exec_ = nullptr;  // cudaGraphExec_t
  int32_t* sink_ = nullptr;
  int32_t* chain_ = nullptr;
};

}  // namespace dsv4::bench
