// CUDA implementation of gpu_timing.h (compiled only when DSV4_WITH_CUDA).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_common.h"
#include "bench/cuda_call.h"
#include "bench/gpu_timing.h"
#include "kernels/mixed_sparse_indices_launch.h"

namespace dsv4::bench {
namespace {

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread spins until `ns` nanoseconds of %globaltimer have passed.
__global__ void busy_wait_kernel(uint64_t ns) {
  const uint64_t start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

// One thread: the smallest nonzero step of %globaltimer over `reads` consecutive reads.
__global__ void globaltimer_tick_kernel(int reads, unsigned long long* tick_ns) {
  uint64_t best = ~uint64_t{0};
  uint64_t last = globaltimer_ns();
  for (int i = 0; i < reads; ++i) {
    const uint64_t now = globaltimer_ns();
    if (now != last && now - last < best) best = now - last;
    last = now;
  }
  *tick_ns = best;
}

// Reads `count` 16-byte words grid-stride (the L2 flush); XORs them so the loads stay live.
__global__ void read_flush_kernel(const uint4* buffer, size_t count, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = buffer[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // practically never; the compiler can't know
}

// Adds 1 to each 32-bit lane of the 16-byte word: a read and a write the compiler must keep.
__device__ __forceinline__ uint4 bumped(uint4 v) {
  return make_uint4(v.x + 1u, v.y + 1u, v.z + 1u, v.w + 1u);
}

// The streaming stand-in. Every thread reads-bumps-writes its grid-stride share of `count`
// 16-byte words: first one full pass, then on around the buffer, until `ns` of %globaltimer
// have passed since its CTA started (checked every four words). Four loads are in flight
// before their stores, for bandwidth. Launched as one resident wave, so the CTAs' start times
// agree to within the launch ramp. If count < 4 x stride a word may be bumped twice in one
// group of four; that changes no timing that matters (count >= 64 MiB / 16 B >> stride).
__global__ void streaming_wait_kernel(uint4* buffer, size_t count, uint64_t ns) {
  __shared__ uint64_t start;
  if (threadIdx.x == 0) start = globaltimer_ns();
  __syncthreads();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const uint4 a = buffer[i], b = buffer[i + stride], c = buffer[i + 2 * stride],
                d = buffer[i + 3 * stride];
    buffer[i] = bumped(a);
    buffer[i + stride] = bumped(b);
    buffer[i + 2 * stride] = bumped(c);
    buffer[i + 3 * stride] = bumped(d);
  }
  for (; i < count; i += stride) buffer[i] = bumped(buffer[i]);
  // The pass is complete for this thread; i is past the end: wrap around.
  while (i >= count) i -= count;
  while (globaltimer_ns() - start < ns) {
    size_t at[4];
    for (int k = 0; k < 4; ++k) {
      at[k] = i;
      i += stride;
      while (i >= count) i -= count;
    }
    const uint4 a = buffer[at[0]], b = buffer[at[1]], c = buffer[at[2]], d = buffer[at[3]];
    buffer[at[0]] = bumped(a);
    buffer[at[1]] = bumped(b);
    buffer[at[2]] = bumped(c);
    buffer[at[3]] = bumped(d);
  }
}

// The launch floor's kernels: nothing to do, so their time is the launch alone.
__global__ void empty_kernel() {}
__global__ void empty_kernel_args(LaunchFloorArgs) {}
template <int kBytes>
struct SizedArg {
  alignas(8) unsigned char bytes[kBytes];
};
template <int kBytes>
__global__ void empty_kernel_sized_args(SizedArg<kBytes>) {}

// A build's launch-and-order skeleton (LaunchFloorGraph): wait for the grid before, let the
// next one launch, follow `hops` dependent reads from chain[first], one store per CTA.
__global__ void graph_floor_kernel(int32_t* sink, const int32_t* chain, int32_t first, int32_t hops) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
  if (threadIdx.x != 0) return;
  int32_t i = first;
  for (int32_t h = 0; h < hops; ++h) i = __ldg(chain + i);
  sink[blockIdx.x] = i + static_cast<int32_t>(blockIdx.x);
}

constexpr int32_t kPageInts = 1024;  // 4 KiB

// One thread: i = chain[i], `hops` times, then stores i (the reads must happen).
__global__ void dependent_reads_kernel(const int32_t* chain, int hops, int32_t* out) {
  int32_t i = 0;
  for (int h = 0; h < hops; ++h) i = __ldg(chain + i);
  *out = i;
}

// cudaLaunchKernel + cudaGetLastError, the runtime's plain launch.
void launch_checked(const void* kernel, void** params, void* stream, const char* call) {
  cudaError_t status =
      cudaLaunchKernel(kernel, dim3(1), dim3(32), params, 0, as_stream(stream));
  const cudaError_t last = cudaGetLastError();  // also clears a launch error's state
  if (status == cudaSuccess) status = last;
  check(status, call, __FILE__, __LINE__);
}

}  // namespace

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

GpuInfo gpu_info() {
  GpuInfo info;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    info.why_absent = status != cudaSuccess
                          ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status)
                          : std::string("no CUDA device visible");
    cudaGetLastError();  // clear a sticky "no device" error
    return info;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    info.why_absent = "cudaGetDeviceProperties failed";
    cudaGetLastError();
    return info;
  }
  info.present = true;
  info.name = p.name;
  info.compute_major = p.major;
  info.compute_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.l2_bytes = p.l2CacheSize;
  info.global_memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  cudaDriverGetVersion(&info.driver_version);
  cudaRuntimeGetVersion(&info.runtime_version);
  return info;
}

GpuStream::GpuStream() {
  cudaStream_t s = nullptr;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
}
GpuStream::~GpuStream() {
  if (stream_ != nullptr) cudaStreamDestroy(as_stream(stream_));
}
void GpuStream::synchronize() { BENCH_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_))); }

EventTimer::EventTimer() {
  cudaEvent_t a = nullptr, b = nullptr;
  BENCH_CUDA_CHECK(cudaEventCreate(&a));
  start_ = a;
  BENCH_CUDA_CHECK(cudaEventCreate(&b));
  stop_ = b;
}
EventTimer::~EventTimer() {
  if (start_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}
void EventTimer::start(void* stream) {
  BENCH_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_), as_stream(stream)));
}
void EventTimer::stop(void* stream) {
  BENCH_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_), as_stream(stream)));
}
double EventTimer::elapsed_us() {
  BENCH_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  float ms = 0;
  BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_),
                                        static_cast<cudaEvent_t>(stop_)));
  return static_cast<double>(ms) * 1000.0;
}

CompletionEvent::CompletionEvent() {
  cudaEvent_t e = nullptr;
  BENCH_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  event_ = e;
}
CompletionEvent::~CompletionEvent() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}
void CompletionEvent::record(void* stream) {
  BENCH_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), as_stream(stream)));
}
void CompletionEvent::wait() {
  BENCH_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
}

L2Flusher::L2Flusher(size_t bytes) {
  const GpuInfo info = gpu_info();
  if (!info.present) throw std::runtime_error("L2Flusher: " + info.why_absent);
  bytes_ = bytes != 0 ? bytes / sizeof(uint4) * sizeof(uint4)
                      : std::max<size_t>(2 * static_cast<size_t>(info.l2_bytes), size_t{64} << 20);
  blocks_ = static_cast<unsigned>(info.sm_count) * 4;
  buffer_ = filled_device_region(bytes_, 0x5a, "L2 flush buffer");
  const cudaError_t status = cudaMalloc(&sink_, sizeof(unsigned));
  if (status != cudaSuccess) {
    cudaFree(buffer_);  // the destructor does not run for a throwing constructor
    check(status, "cudaMalloc(L2 flush sink)", __FILE__, __LINE__);
  }
}
L2Flusher::~L2Flusher() {
  if (buffer_ != nullptr) cudaFree(buffer_);
  if (sink_ != nullptr) cudaFree(sink_);
}
void L2Flusher::flush(void* stream) {
  read_flush_kernel<<<blocks_, 512, 0, as_stream(stream)>>>(
      static_cast<const uint4*>(buffer_), bytes_ / sizeof(uint4), static_cast<unsigned*>(sink_));
  BENCH_CUDA_CHECK(cudaGetLastError());
}

CopyBuffers::CopyBuffers(size_t bytes) : bytes_(bytes) {
  src_ = filled_device_region(bytes, 0x5a, "copy source");
  try {
    dst_ = filled_device_region(bytes, 0, "copy destination");
  } catch (...) {
    cudaFree(src_);  // the destructor does not run for a throwing constructor
    throw;
  }
}
CopyBuffers::~CopyBuffers() {
  if (src_ != nullptr) cudaFree(src_);
  if (dst_ != nullptr) cudaFree(dst_);
}

CopyBandwidth CopyBuffers::measure(int reps, void* stream, int warmups) {
  if (reps < 1) throw std::invalid_argument("CopyBuffers::measure: reps < 1");
  CopyBandwidth out;
  EventTimer timer;
  for (int i = 0; i < warmups + reps; ++i) {
    timer.start(stream);
    BENCH_CUDA_CHECK(cudaMemcpyAsync(dst_, src_, bytes_, cudaMemcpyDeviceToDevice, as_stream(stream)));
    timer.stop(stream);
    const double us = timer.elapsed_us();
    if (i >= warmups) out.samples_us.push_back(us);
  }
  out.bytes = bytes_;
  out.median_us = median(out.samples_us);
  const double moved = 2.0 * static_cast<double>(bytes_);
  auto gbps = [&](double us) { return us > 0 ? moved / (us * 1e-6) / 1e9 : 0.0; };
  out.median_gbps = gbps(out.median_us);
  out.min_gbps = gbps(*std::max_element(out.samples_us.begin(), out.samples_us.end()));
  out.max_gbps = gbps(*std::min_element(out.samples_us.begin(), out.samples_us.end()));
  return out;
}

void gpu_busy_wait_ns(void* stream, int64_t ns) {
  if (ns < 0 || ns > 1000000000) {
    throw std::invalid_argument("gpu_busy_wait_ns: ns " + std::to_string(ns) +
                                " outside [0, 1e9]");
  }
  busy_wait_kernel<<<1, 1, 0, as_stream(stream)>>>(static_cast<uint64_t>(ns));
  BENCH_CUDA_CHECK(cudaGetLastError());
}

double measure_on_stream_us(void* stream, int samples, const std::function<void()>& enqueue) {
  if (samples < 1) throw std::invalid_argument("measure_on_stream_us: samples < 1");
  EventTimer timer;
  std::vector<double> us;
  for (int i = 0; i < samples; ++i) {
    timer.start(stream);
    enqueue();
    timer.stop(stream);
    us.push_back(timer.elapsed_us());
  }
  return median(us);
}

DurationCalibration calibrate_busy_wait(void* stream) {
  unsigned long long* tick = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&tick, sizeof(*tick)));
  globaltimer_tick_kernel<<<1, 1, 0, as_stream(stream)>>>(100000, tick);
  cudaError_t status = cudaGetLastError();
  unsigned long long tick_host = 0;
  if (status == cudaSuccess) {
    status = cudaMemcpyAsync(&tick_host, tick, sizeof(tick_host), cudaMemcpyDeviceToHost,
                             as_stream(stream));
  }
  if (status == cudaSuccess) status = cudaStreamSynchronize(as_stream(stream));
  const cudaError_t freed = cudaFree(tick);
  BENCH_CUDA_CHECK(status);
  BENCH_CUDA_CHECK(freed);

  gpu_busy_wait_ns(stream, 1000);  // warm-up: module load stays out of the numbers
  BENCH_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
  DurationCalibration cal =
      calibrate_durations(busy_wait_calibration_points(), 5, [stream](double requested) {
        return measure_on_stream_us(stream, 1, [&] {
          gpu_busy_wait_ns(stream, static_cast<int64_t>(requested * 1000.0));
        });
      });
  cal.globaltimer_tick_ns = static_cast<double>(tick_host);
  if (!cal.fit_plausible) {
    std::fprintf(stderr, "warning: busy-wait slope is implausible; using 1.0\n");
  }
  return cal;
}

void gpu_busy_wait_us(void* stream, const DurationCalibration& calibration, double us) {
  if (us <= 0) return;
  gpu_busy_wait_ns(stream, static_cast<int64_t>(calibration.request_for(us) * 1000.0));
}

StreamingWait::StreamingWait() {
  const GpuInfo info = gpu_info();
  if (!info.present) throw std::runtime_error("StreamingWait: " + info.why_absent);
  if (info.l2_bytes <= 0 || info.sm_count <= 0) {
    throw std::runtime_error("StreamingWait: device reports L2 " + std::to_string(info.l2_bytes) +
                             " bytes, " + std::to_string(info.sm_count) + " SMs");
  }
  l2_bytes_ = info.l2_bytes;
  constexpr size_t kMiB = size_t{1} << 20;
  const size_t wanted = std::max<size_t>(2 * static_cast<size_t>(info.l2_bytes), 64 * kMiB);
  bytes_ = (wanted + kMiB - 1) / kMiB * kMiB;  // >= 2 x L2, a whole number of 16-byte words
  threads_ = 512;
  int per_sm = 0;
  BENCH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, streaming_wait_kernel, static_cast<int>(threads_), 0));
  if (per_sm < 1) throw std::runtime_error("StreamingWait: kernel cannot be resident (occupancy 0)");
  blocks_ = static_cast<unsigned>(per_sm) * static_cast<unsigned>(info.sm_count);
  buffer_ = filled_device_region(bytes_, 0x5a, "streaming wait buffer");
}
StreamingWait::~StreamingWait() {
  if (buffer_ != nullptr) cudaFree(buffer_);
}
void StreamingWait::run_ns(void* stream, int64_t ns) {
  if (ns < 0 || ns > 1000000000) {
    throw std::invalid_argument("StreamingWait::run_ns: ns " + std::to_string(ns) +
                                " outside [0, 1e9]");
  }
  streaming_wait_kernel<<<blocks_, threads_, 0, as_stream(stream)>>>(
      static_cast<uint4*>(buffer_), bytes_ / sizeof(uint4), static_cast<uint64_t>(ns));
  BENCH_CUDA_CHECK(cudaGetLastError());
}

DurationCalibration calibrate_streaming_wait(StreamingWait& wait, void* stream) {
  wait.run_ns(stream, 0);  // warm-up: module load and first touch stay out of the numbers
  BENCH_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
  DurationCalibration cal =
      calibrate_durations(streaming_calibration_points(), 5, [&wait, stream](double requested) {
        return measure_on_stream_us(stream, 1, [&] {
          wait.run_ns(stream, static_cast<int64_t>(requested * 1000.0));
        });
      });
  if (!cal.fit_plausible) {
    std::fprintf(stderr, "warning: streaming-kernel slope is implausible; using 1.0\n");
  }
  return cal;
}

void gpu_streaming_wait_us(void* stream, StreamingWait& wait, const DurationCalibration& calibration,
                           double us) {
  if (us <= 0) return;
  wait.run_ns(stream, static_cast<int64_t>(calibration.request_for(us) * 1000.0));
}

void launch_empty_kernel(void* stream) {
  void* params[] = {nullptr};  // the kernel takes none; a valid array all the same
  launch_checked(reinterpret_cast<const void*>(&empty_kernel), params, stream,
                 "cudaLaunchKernel(empty_kernel) / cudaGetLastError");
}

void launch_empty_kernel_programmatic(void* stream) {
  void* params[] = {nullptr};  // the kernel takes none; a valid array all the same
  launch_ex_checked(reinterpret_cast<const void*>(&empty_kernel), 1, 32, params, true, stream,
                    "cudaLaunchKernelExC(empty_kernel, programmatic) / cudaGetLastError");
}

void launch_empty_kernel_driver_programmatic(void* stream) {
  void* params[] = {nullptr};  // the kernel takes none; a valid array all the same
  const kernels::KernelStatus status =
      kernels::launch_build_kernel(reinterpret_cast<const void*>(&empty_kernel), 1, 32, params, true, as_stream(stream),
                                   "launch_build_kernel(empty_kernel, programmatic)", __LINE__);
  check(static_cast<cudaError_t>(status.code), status.call, __FILE__, __LINE__);
}

void launch_empty_kernel_args(void* stream, const LaunchFloorArgs& args) {
  void* params[] = {const_cast<LaunchFloorArgs*>(&args)};  // copied at launch
  launch_checked(reinterpret_cast<const void*>(&empty_kernel_args), params, stream,
                 "cudaLaunchKernel(empty_kernel_args) / cudaGetLastError");
}

namespace {
template <int kBytes>
void launch_sized(void* stream) {
  SizedArg<kBytes> arg{};
  void* params[] = {&arg};  // copied at launch
  launch_ex_checked(reinterpret_cast<const void*>(&empty_kernel_sized_args<kBytes>), 1, 32, params, true, stream,
                    "cudaLaunchKernelExC(empty_kernel_sized_args) / cudaGetLastError");
}

// Launches the kernel of kLaunchFloorArgBytes[i] == bytes; false when no entry is `bytes`.
template <size_t... I>
bool launch_sized_of(void* stream, int bytes, std::index_sequence<I...>) {
  return ((bytes == kLaunchFloorArgBytes[I] && (launch_sized<kLaunchFloorArgBytes[I]>(stream), true)) || ...);
}
}  // namespace

void launch_empty_kernel_sized_args(void* stream, int bytes) {
  constexpr size_t kCount = sizeof(kLaunchFloorArgBytes) / sizeof(kLaunchFloorArgBytes[0]);
  if (!launch_sized_of(stream, bytes, std::make_index_sequence<kCount>{})) {
    throw std::invalid_argument("launch_empty_kernel_sized_args: no kernel for " + std::to_string(bytes) + " bytes");
  }
}

DependentReadChain::DependentReadChain() {
  const size_t ints = static_cast<size_t>(kMaxHops + 1) * kPageInts;
  BENCH_CUDA_CHECK(cudaMalloc(&chain_, ints * sizeof(int32_t)));
  BENCH_CUDA_CHECK(cudaMalloc(&out_, sizeof(int32_t)));
  std::vector<int32_t> host(ints, 0);
  for (int h = 0; h < kMaxHops; ++h) host[static_cast<size_t>(h) * kPageInts] = (h + 1) * kPageInts;
  BENCH_CUDA_CHECK(cudaMemcpy(chain_, host.data(), ints * sizeof(int32_t), cudaMemcpyHostToDevice));
}

DependentReadChain::~DependentReadChain() {
  (void)cudaFree(chain_);
  (void)cudaFree(out_);
}

void DependentReadChain::launch(void* stream, int hops) {
  if (hops < 1 || hops > kMaxHops) throw std::invalid_argument("DependentReadChain: hops out of range");
  void* params[] = {&chain_, &hops, &out_};
  launch_checked(reinterpret_cast<const void*>(&dependent_reads_kernel), params, stream,
                 "cudaLaunchKernel(dependent_reads_kernel) / cudaGetLastError");
}

int32_t DependentReadChain::last_value() {
  int32_t v = 0;
  BENCH_CUDA_CHECK(cudaMemcpy(&v, out_, sizeof(v), cudaMemcpyDeviceToHost));
  return v;
}

LaunchFloorGraph::LaunchFloorGraph(void* stream, int nodes, int ctas, int hops, bool programmatic_launch)
    : stream_(stream) {
  if (nodes < 1 || ctas < 1 || hops < 0 || hops > 2) {
    throw std::invalid_argument("LaunchFloorGraph: nodes and ctas must be >= 1, hops in [0, 2]");
  }
  BENCH_CUDA_CHECK(cudaMalloc(&sink_, static_cast<size_t>(ctas) * sizeof(int32_t)));
  // A page per node whose first int leads to the shared page (nodes * kPageInts).
  const size_t ints = static_cast<size_t>(nodes + 1) * kPageInts;
  BENCH_CUDA_CHECK(cudaMalloc(&chain_, ints * sizeof(int32_t)));
  std::vector<int32_t> host(ints, 0);
  for (int n = 0; n < nodes; ++n) host[static_cast<size_t>(n) * kPageInts] = nodes * kPageInts;
  BENCH_CUDA_CHECK(cudaMemcpy(chain_, host.data(), ints * sizeof(int32_t), cudaMemcpyHostToDevice));
  cudaGraph_t graph = nullptr;
  BENCH_CUDA_CHECK(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeThreadLocal));
  for (int n = 0; n < nodes; ++n) {
    int32_t first = n * kPageInts;
    int32_t node_hops = hops;
    void* params[] = {&sink_, &chain_, &first, &node_hops};  // copied at capture
    launch_ex_checked(reinterpret_cast<const void*>(&graph_floor_kernel), static_cast<unsigned>(ctas), 128, params,
                      programmatic_launch, stream, "cudaLaunchKernelExC(graph_floor_kernel) / cudaGetLastError");
  }
  BENCH_CUDA_CHECK(cudaStreamEndCapture(as_stream(stream), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  BENCH_CUDA_CHECK(status);
  exec_ = exec;
}

LaunchFloorGraph::~LaunchFloorGraph() {
  (void)cudaStreamSynchronize(as_stream(stream_));
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  (void)cudaFree(sink_);
  (void)cudaFree(chain_);
}

void LaunchFloorGraph::replay() {
  BENCH_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), as_stream(stream_)));
}

}  // namespace dsv4::bench
