// gpu_timing.h and streaming_floors.h in a build without CUDA: no device, and every device
// tool refuses to run.
#include <stdexcept>
#include <utility>

#include "bench/gpu_timing.h"
#include "bench/streaming_floors.h"

namespace dsv4::bench {
namespace {

[[noreturn]] void no_cuda(const char* what) {
  throw std::runtime_error(std::string(what) + ": built without CUDA (DSV4_CUDA=OFF)");
}

}  // namespace

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

GpuInfo gpu_info() {
  GpuInfo info;
  info.why_absent = "built without CUDA (DSV4_CUDA=OFF)";
  return info;
}

GpuStream::GpuStream() { no_cuda("GpuStream"); }
GpuStream::~GpuStream() = default;
void GpuStream::synchronize() { no_cuda("GpuStream::synchronize"); }

EventTimer::EventTimer() { no_cuda("EventTimer"); }
EventTimer::~EventTimer() = default;
void EventTimer::start(void*) { no_cuda("EventTimer::start"); }
void EventTimer::stop(void*) { no_cuda("EventTimer::stop"); }
double EventTimer::elapsed_us() { no_cuda("EventTimer::elapsed_us"); }

CompletionEvent::CompletionEvent() { no_cuda("CompletionEvent"); }
CompletionEvent::~CompletionEvent() = default;
void CompletionEvent::record(void*) { no_cuda("CompletionEvent::record"); }
void CompletionEvent::wait() { no_cuda("CompletionEvent::wait"); }

L2Flusher::L2Flusher(size_t) { no_cuda("L2Flusher"); }
L2Flusher::~L2Flusher() = default;
void L2Flusher::flush(void*) { no_cuda("L2Flusher::flush"); }

CopyBuffers::CopyBuffers(size_t) { no_cuda("CopyBuffers"); }
CopyBuffers::~CopyBuffers() = default;
CopyBandwidth CopyBuffers::measure(int, void*, int) { no_cuda("CopyBuffers::measure"); }
void gpu_busy_wait_ns(void*, int64_t) { no_cuda("gpu_busy_wait_ns"); }
DurationCalibration calibrate_busy_wait(void*) { no_cuda("calibrate_busy_wait"); }
void gpu_busy_wait_us(void*, const DurationCalibration&, double) { no_cuda("gpu_busy_wait_us"); }
double measure_on_stream_us(void*, int, const std::function<void()>&) {
  no_cuda("measure_on_stream_us");
}

StreamingWait::StreamingWait() { no_cuda("StreamingWait"); }
StreamingWait::~StreamingWait() = default;
void StreamingWait::run_ns(void*, int64_t) { no_cuda("StreamingWait::run_ns"); }
DurationCalibration calibrate_streaming_wait(StreamingWait&, void*) {
  no_cuda("calibrate_streaming_wait");
}
void gpu_streaming_wait_us(void*, StreamingWait&, const DurationCalibration&, double) {
  no_cuda("gpu_streaming_wait_us");
}
void launch_empty_kernel(void*) { no_cuda("launch_empty_kernel"); }
void launch_empty_kernel_programmatic(void*) { no_cuda("launch_empty_kernel_programmatic"); }
void launch_empty_kernel_driver_programmatic(void*) { no_cuda("launch_empty_kernel_driver_programmatic"); }
void launch_empty_kernel_args(void*, const LaunchFloorArgs&) { no_cuda("launch_empty_kernel_args"); }
void launch_empty_kernel_sized_args(void*, int) { no_cuda("launch_empty_kernel_sized_args"); }
DependentReadChain::DependentReadChain() { no_cuda("DependentReadChain"); }
DependentReadChain::~DependentReadChain() = default;
void DependentReadChain::launch(void*, int) { no_cuda("DependentReadChain::launch"); }
int32_t DependentReadChain::last_value() { no_cuda("DependentReadChain::last_value"); }
StreamingBytes::~StreamingBytes() = default;
void StreamingBytes::reserve(int64_t, int64_t) { no_cuda("StreamingBytes::reserve"); }
void StreamingBytes::launch(void*, int64_t, int64_t, StreamingShape, int, int64_t, int64_t, int32_t) {
  no_cuda("StreamingBytes::launch");
}
StreamingSequence::StreamingSequence(std::vector<StreamedBuild> builds) : builds_(std::move(builds)) {
  no_cuda("StreamingSequence");
}
StreamingSequence::~StreamingSequence() = default;
void StreamingSequence::release() {}
void StreamingSequence::launch(void*, StreamingShape, int) { no_cuda("StreamingSequence::launch"); }
LaunchFloorGraph::LaunchFloorGraph(void*, int, int, int, bool) : stream_(nullptr) { no_cuda("LaunchFloorGraph"); }
LaunchFloorGraph::~LaunchFloorGraph() = default;
void LaunchFloorGraph::replay() { no_cuda("LaunchFloorGraph::replay"); }

}  // namespace dsv4::bench
