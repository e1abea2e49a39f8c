// CUDA implementation of gpu_timing.h (compiled only when DSV4_WITH_CUDA).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/gpu_timing.h"

namespace dsv4::bench {
namespace {

void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")");
}
#define BENCH_CUDA_CHECK(call) check((call), #call, __FILE__, __LINE__)

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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

// cudaLaunchKernel + cudaGetLastError, as the builder's launcher does.
void launch_checked(const void* kernel, void** params, void* stream, const char* call) {
  cudaError_t status =
      cudaLaunchKernel(kernel, dim3(1), dim3(32), params, 0, as_stream(stream));
  const cudaError_t last = cudaGetLastError();  // also clears a launch error's state
  if (status == cudaSuccess) status = last;
  check(status, call, __FILE__, __LINE__);
}

// cudaLaunchKernelExC + cudaGetLastError, with programmatic dependent launch when asked, as
// the builder's launcher launches its kernels.
void launch_ex_checked(const void* kernel, dim3 grid, dim3 block, void** params, bool programmatic_launch,
                       void* stream, const char* call) {
  cudaLaunchAttribute programmatic{};
  programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = as_stream(stream);
  config.attrs = programmatic_launch ? &programmatic : nullptr;
  config.numAttrs = programmatic_launch ? 1 : 0;
  cudaError_t status = cudaLaunchKernelExC(&config, kernel, params);
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

L2Flusher::L2Flusher() {
  const GpuInfo info = gpu_info();
  if (!info.present) throw std::runtime_error("L2Flusher: " + info.why_absent);
  bytes_ = std::max<size_t>(2 * static_cast<size_t>(info.l2_bytes), size_t{64} << 20);
  blocks_ = static_cast<unsigned>(info.sm_count) * 4;
  BENCH_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
  BENCH_CUDA_CHECK(cudaMalloc(&sink_, sizeof(unsigned)));
  BENCH_CUDA_CHECK(cudaMemset(buffer_, 0x5a, bytes_));
  BENCH_CUDA_CHECK(cudaDeviceSynchronize());
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

CopyBandwidth measure_copy_bandwidth(size_t bytes, int reps, void* stream) {
  if (reps < 1) throw std::invalid_argument("measure_copy_bandwidth: reps < 1");
  void* src = nullptr;
  void* dst = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&src, bytes));
  CopyBandwidth out;
  try {
    BENCH_CUDA_CHECK(cudaMalloc(&dst, bytes));
    BENCH_CUDA_CHECK(cudaMemsetAsync(src, 0x5a, bytes, as_stream(stream)));
    EventTimer timer;
    for (int i = 0; i < 2 + reps; ++i) {
      timer.start(stream);
      BENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream)));
      timer.stop(stream);
      const double us = timer.elapsed_us();
      if (i >= 2) out.samples_us.push_back(us);
    }
  } catch (...) {
    cudaFree(src);
    if (dst != nullptr) cudaFree(dst);
    throw;
  }
  BENCH_CUDA_CHECK(cudaFree(src));
  BENCH_CUDA_CHECK(cudaFree(dst));
  out.bytes = bytes;
  out.median_us = median(out.samples_us);
  const double moved = 2.0 * static_cast<double>(bytes);
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
  BENCH_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
  try {
    // The stream is non-blocking: the memset (legacy stream) must be complete before any use.
    BENCH_CUDA_CHECK(cudaMemset(buffer_, 0x5a, bytes_));
    BENCH_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    cudaFree(buffer_);  // the destructor does not run for a throwing constructor
    buffer_ = nullptr;
    throw;
  }
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
  launch_ex_checked(reinterpret_cast<const void*>(&empty_kernel), dim3(1), dim3(32), params, true, stream,
                    "cudaLaunchKernelExC(empty_kernel, programmatic) / cudaGetLastError");
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
  launch_ex_checked(reinterpret_cast<const void*>(&empty_kernel_sized_args<kBytes>), dim3(1), dim3(32), params, true,
                    stream, "cudaLaunchKernelExC(empty_kernel_sized_args) / cudaGetLastError");
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

namespace {
constexpr int kStreamingThreads = 256;  // the widest CTA of StreamingBytes::kShapes

// Word i of CTA b, thread x, step k: b * kWords * kThreads + k * kThreads + x (each step of a
// warp is 512 contiguous bytes). Words below `reads` are read from src, the next `shared_reads` from
// shared; words below `writes` are written: the word read where there is one, else the word's
// index. Words read but not written are XORed into a value stored to `sink` only if it equals
// kSinkMagic (never, for the buffers' 0x3c fill), so no read is optimized away. Waits for the
// grid before it and lets the next one launch, as a build does (no-ops unless launched with
// programmatic dependent launch).
constexpr int32_t kSinkMagic = 1;

// Loads thread `first`'s kWords words (as above: src below `reads`, then shared, then the index).
template <int kWords, int kThreads>
__device__ __forceinline__ void load_words(const int4* src, int64_t reads, const int4* shared, int64_t all_reads,
                                           int64_t first, int4 (&v)[kWords]) {
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const int64_t i = first + static_cast<int64_t>(k) * kThreads;
    v[k] = i < reads       ? __ldg(src + i)
           : i < all_reads ? __ldg(shared + (i - reads))
                           : make_int4(static_cast<int>(i), 0, 0, 0);
  }
}

// Stores the words below `writes`; the words read and not written go to `sink` (never, above).
template <int kWords, int kThreads>
__device__ __forceinline__ void store_words(int4* dst, int64_t writes, int64_t all_reads, int64_t first,
                                            const int4 (&v)[kWords], int4* sink) {
  int32_t unwritten = 0;
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const int64_t i = first + static_cast<int64_t>(k) * kThreads;
    if (i < writes) {
      dst[i] = v[k];
    } else if (i < all_reads) {
      unwritten ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
  }
  if (unwritten == kSinkMagic) *sink = v[0];
}

__device__ __forceinline__ void wait_prior_grid_and_release_next() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

template <int kWords, int kThreads>
__global__ void __launch_bounds__(kThreads)
    streaming_bytes_kernel(const int4* src, int64_t reads, const int4* shared, int64_t shared_reads, int4* dst,
                           int64_t writes, int4* sink) {
  wait_prior_grid_and_release_next();
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWords * kThreads + threadIdx.x;
  int4 v[kWords];
  load_words<kWords, kThreads>(src, reads, shared, reads + shared_reads, first, v);
  store_words<kWords, kThreads>(dst, writes, reads + shared_reads, first, v, sink);
}

// The byte floor with a planned build's dependent reads (StreamingBytes::launch with hops):
// each thread reads the plan entry of the row its first word falls in (rows of 2^row_shift
// words, entries 8 bytes apart: one a row, as a planned build's rows read theirs), then issues
// its reads, then, for kHops = 2, reads the table entry the plan entry names; its writes carry
// the last value read (0), so none leaves before the chain ends. The head first, so that its
// latency hides behind the reads: the order that makes the chain cost least.
constexpr int32_t kChainTableEntries = 256;
template <int kWords, int kThreads, int kHops>
__global__ void __launch_bounds__(kThreads)
    chained_bytes_kernel(const int4* src, int64_t reads, const int4* shared, int64_t shared_reads, int4* dst,
                         int64_t writes, const int2* plan, int32_t row_shift, const int32_t* table, int4* sink) {
  static_assert(kHops == 1 || kHops == 2, "one or two dependent reads");
  wait_prior_grid_and_release_next();
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWords * kThreads + threadIdx.x;
  // Read first and whole (both chains use x): ptxas then issues it before the other reads.
  const int2 entry = __ldg(plan + (first >> row_shift));
  int4 v[kWords];
  load_words<kWords, kThreads>(src, reads, shared, reads + shared_reads, first, v);
  int32_t carried = entry.y;
  if constexpr (kHops == 2) {
    carried += __ldg(table + entry.x);
  } else {
    carried += entry.x / kChainTableEntries;  // 0 (x < kChainTableEntries): x read, as hop 2 reads it
  }
#pragma unroll
  for (int k = 0; k < kWords; ++k) v[k].x += carried;
  store_words<kWords, kThreads>(dst, writes, reads + shared_reads, first, v, sink);
}

int64_t words_of(int64_t bytes) { return (bytes + 15) / 16; }
}  // namespace

namespace {
// The chains' plan: `entries` entries, entry r naming table entry r % kChainTableEntries (y = 0).
void* chain_plan(int64_t entries) {
  std::vector<int2> plan(static_cast<size_t>(entries));
  for (int64_t r = 0; r < entries; ++r) plan[static_cast<size_t>(r)] = make_int2(static_cast<int>(r % kChainTableEntries), 0);
  void* p = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&p, plan.size() * sizeof(int2)));
  const cudaError_t status = cudaMemcpy(p, plan.data(), plan.size() * sizeof(int2), cudaMemcpyHostToDevice);
  if (status != cudaSuccess) {
    (void)cudaFree(p);
    check(status, "cudaMemcpy(chain plan)", __FILE__, __LINE__);
  }
  return p;
}

// The chains' table: zeros, what the writes carry.
void* chain_table() {
  void* p = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&p, kChainTableEntries * sizeof(int32_t)));
  const cudaError_t status = cudaMemset(p, 0, kChainTableEntries * sizeof(int32_t));
  if (status != cudaSuccess) {
    (void)cudaFree(p);
    check(status, "cudaMemset(chain table)", __FILE__, __LINE__);
  }
  return p;
}

// Plan entries for grids over `words` words whatever their rows and shapes (rows of 1 word,
// grids of 1 word a thread in CTAs of kStreamingThreads: one a thread of the widest grid).
int64_t chain_plan_entries(int64_t words) {
  return std::max<int64_t>(1, (words + kStreamingThreads - 1) / kStreamingThreads) * kStreamingThreads;
}

// Rows of the largest power of two <= row_words words (a shift, not a division, in the kernel).
int32_t row_shift_of(int64_t row_words) {
  if (row_words < 1) throw std::invalid_argument("streaming kernels: row_words must be >= 1");
  int32_t shift = 0;
  while ((int64_t{2} << shift) <= row_words) ++shift;
  return shift;
}

template <int kWords, int kThreads>
const void* streaming_kernel_of(int hops) {
  return hops == 0   ? reinterpret_cast<const void*>(&streaming_bytes_kernel<kWords, kThreads>)
         : hops == 1 ? reinterpret_cast<const void*>(&chained_bytes_kernel<kWords, kThreads, 1>)
                     : reinterpret_cast<const void*>(&chained_bytes_kernel<kWords, kThreads, 2>);
}

template <int kThreads>
const void* streaming_kernel_of(int words, int hops) {
  return words == 1   ? streaming_kernel_of<1, kThreads>(hops)
         : words == 2 ? streaming_kernel_of<2, kThreads>(hops)
         : words == 4 ? streaming_kernel_of<4, kThreads>(hops)
                      : nullptr;
}

// One streaming launch of `shape` (one of StreamingBytes::kShapes), `hops` 0-2; reads from src
// then shared, writes to dst (also the never-written sink), plan and table for the chains.
void launch_streaming(void* stream, StreamingShape shape, int hops, const int4* src, int64_t reads,
                      const int4* shared, int64_t shared_reads, int4* dst, int64_t writes, const void* plan,
                      int64_t row_words, const void* table, int4* sink, bool programmatic_launch) {
  if (hops < 0 || hops > StreamingBytes::kMaxHops) throw std::invalid_argument("streaming kernels: hops must be 0, 1 or 2");
  const void* kernel = shape.threads == kStreamingThreads ? streaming_kernel_of<kStreamingThreads>(shape.words, hops)
                       : shape.threads == 32              ? streaming_kernel_of<32>(shape.words, hops)
                                                          : nullptr;
  if (kernel == nullptr) throw std::invalid_argument("streaming kernels: shape not one of StreamingBytes::kShapes");
  int32_t row_shift = row_shift_of(row_words);
  const int64_t per_cta = int64_t{shape.words} * shape.threads;
  const int64_t ctas = std::max<int64_t>(1, (std::max(reads + shared_reads, writes) + per_cta - 1) / per_cta);
  const int2* plan_entries = static_cast<const int2*>(plan);
  const int32_t* table_entries = static_cast<const int32_t*>(table);
  void* streaming_params[] = {&src, &reads, &shared, &shared_reads, &dst, &writes, &sink};
  void* chained_params[] = {&src, &reads, &shared, &shared_reads, &dst, &writes, &plan_entries, &row_shift, &table_entries, &sink};
  launch_ex_checked(kernel, dim3(static_cast<unsigned>(ctas)), dim3(static_cast<unsigned>(shape.threads)),
                    hops == 0 ? streaming_params : chained_params, programmatic_launch, stream,
                    "cudaLaunchKernelExC(streaming_bytes_kernel / chained_bytes_kernel) / cudaGetLastError");
}
}  // namespace

StreamingBytes::~StreamingBytes() {
  (void)cudaFree(src_);
  (void)cudaFree(dst_);
  (void)cudaFree(plan_);
  (void)cudaFree(table_);
}

void StreamingBytes::reserve(int64_t read_bytes, int64_t write_bytes) {
  if (read_bytes < 0 || write_bytes < 0) throw std::invalid_argument("StreamingBytes: negative size");
  const auto grow = [](void*& p, int64_t& have, int64_t want) {
    want = words_of(want) * 16;
    if (want <= have) return;
    (void)cudaFree(p);
    p = nullptr;
    have = 0;
    BENCH_CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(want)));
    BENCH_CUDA_CHECK(cudaMemset(p, 0x3c, static_cast<size_t>(want)));
    have = want;
  };
  grow(src_, src_bytes_, read_bytes);
  grow(dst_, dst_bytes_, write_bytes);
  const int64_t entries = chain_plan_entries(std::max(words_of(read_bytes), words_of(write_bytes)));
  if (entries > plan_entries_) {
    (void)cudaFree(plan_);
    plan_ = nullptr;
    plan_entries_ = 0;
    plan_ = chain_plan(entries);
    plan_entries_ = entries;
  }
  if (table_ == nullptr) table_ = chain_table();
}

void StreamingBytes::launch(void* stream, int64_t read_bytes, int64_t write_bytes, StreamingShape shape, int hops,
                            int64_t row_words) {
  if (read_bytes < 0 || write_bytes < 0 || words_of(read_bytes) * 16 > src_bytes_ ||
      words_of(write_bytes) * 16 > dst_bytes_) {
    throw std::invalid_argument("StreamingBytes::launch: sizes outside reserve()'s");
  }
  // A plain launch, as kernel_bench launches the builds it times.
  launch_streaming(stream, shape, hops, static_cast<const int4*>(src_), words_of(read_bytes), nullptr, 0,
                   static_cast<int4*>(dst_), words_of(write_bytes), plan_, row_words, table_, static_cast<int4*>(dst_),
                   false);
}

namespace {
void* filled_region(int64_t bytes, uint8_t fill) {
  void* p = nullptr;
  const size_t size = static_cast<size_t>(std::max<int64_t>(16, words_of(bytes) * 16));
  BENCH_CUDA_CHECK(cudaMalloc(&p, size));
  const cudaError_t status = cudaMemset(p, fill, size);
  if (status != cudaSuccess) {
    (void)cudaFree(p);
    check(status, "cudaMemset(StreamingSequence region)", __FILE__, __LINE__);
  }
  return p;
}
}  // namespace

StreamingSequence::StreamingSequence(std::vector<StreamedBuild> builds) : builds_(std::move(builds)) {
  int64_t shared_bytes = 0, widest_words = 0;
  std::vector<int64_t> input_bytes, output_bytes;
  const auto grow = [](std::vector<int64_t>& sizes, int id, int64_t bytes) {
    if (id < 0) throw std::invalid_argument("StreamingSequence: negative region id");
    if (sizes.size() <= static_cast<size_t>(id)) sizes.resize(static_cast<size_t>(id) + 1, 0);
    sizes[static_cast<size_t>(id)] = std::max(sizes[static_cast<size_t>(id)], bytes);
  };
  for (const StreamedBuild& b : builds_) {
    if (b.own_read_bytes < 0 || b.shared_read_bytes < 0 || b.write_bytes < 0) {
      throw std::invalid_argument("StreamingSequence: negative size");
    }
    (void)row_shift_of(b.row_words);  // throws on rows below one word
    grow(input_bytes, b.input, b.own_read_bytes);
    grow(output_bytes, b.output, b.write_bytes);
    shared_bytes = std::max(shared_bytes, b.shared_read_bytes);
    widest_words = std::max({widest_words, words_of(b.own_read_bytes) + words_of(b.shared_read_bytes),
                             words_of(b.write_bytes)});
  }
  try {
    shared_ = filled_region(shared_bytes, 0x3c);
    sink_ = filled_region(16, 0);
    for (int64_t bytes : input_bytes) inputs_.push_back(filled_region(bytes, 0x3c));
    for (int64_t bytes : output_bytes) outputs_.push_back(filled_region(bytes, 0));
    plan_ = chain_plan(chain_plan_entries(widest_words));
    table_ = chain_table();
  } catch (...) {
    release();
    throw;
  }
}

void StreamingSequence::release() {
  for (void* p : inputs_) (void)cudaFree(p);
  for (void* p : outputs_) (void)cudaFree(p);
  (void)cudaFree(shared_);
  (void)cudaFree(sink_);
  (void)cudaFree(plan_);
  (void)cudaFree(table_);
  inputs_.clear();
  outputs_.clear();
  shared_ = sink_ = plan_ = table_ = nullptr;
}

StreamingSequence::~StreamingSequence() { release(); }

void StreamingSequence::launch(void* stream, StreamingShape shape, int hops) {
  for (const StreamedBuild& b : builds_) {
    launch_streaming(stream, shape, hops, static_cast<const int4*>(inputs_[static_cast<size_t>(b.input)]),
                     words_of(b.own_read_bytes), static_cast<const int4*>(shared_), words_of(b.shared_read_bytes),
                     static_cast<int4*>(outputs_[static_cast<size_t>(b.output)]), words_of(b.write_bytes), plan_,
                     b.row_words, table_, static_cast<int4*>(sink_), true);
  }
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
    launch_ex_checked(reinterpret_cast<const void*>(&graph_floor_kernel), dim3(static_cast<unsigned>(ctas)), dim3(128),
                      params, programmatic_launch, stream, "cudaLaunchKernelExC(graph_floor_kernel) / cudaGetLastError");
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
