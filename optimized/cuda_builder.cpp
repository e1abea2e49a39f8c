// CUDA backend: each build is one kernel launch on the caller's stream; outputs come from a
// pre-sized device arena recycled at release_outputs(); content errors accumulate in a device
// counter read (with one stream sync) by take_content_errors(). The per-build path has no
// allocation, no synchronization and no CUDA call besides the launch and its error check.
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/mixed_sparse_indices_launch.h"
#include "optimized/cuda_builder.h"
#include "optimized/cuda_check.h"
#include "optimized/device_memory.h"
#include "optimized/graph_layout.h"
#include "optimized/kernel_args.h"
#include "optimized/step_arena.h"

namespace dsv4::opt {
namespace {


struct DeviceDeleter {
  void operator()(void* p) const noexcept { device_release(p); }
};
struct PinnedDeleter {
  void operator()(void* p) const noexcept {
    if (p == nullptr) return;
    const std::shared_lock<std::shared_mutex> no_recording(device_sync_lock());  // cudaFreeHost may sync
    (void)cudaFreeHost(p);
  }
};

class CudaBuilder final : public MixedSparseIndicesBuilder {
 public:
  CudaBuilder(cudaStream_t stream, const CudaBuilderOptions& options)
      : stream_(stream), arena_(ArenaMemory{&device_allocate, &device_release}, options.workspace_bytes) {
    DSV4_CUDA_CHECK(cudaGetDevice(&device_));
    check_kernel_status(kernels::prepare_mixed_sparse_indices_launch(device_, &launch_config_));
    launch_config_.forced = options.forced_shape;
    launch_config_.programmatic_launch = options.programmatic_launch;
    launch_config_.gathered_lookups = options.gathered_lookups;
    device_errors_.reset(static_cast<unsigned long long*>(device_allocate(sizeof(unsigned long long))));
    void* pinned = nullptr;
    DSV4_CUDA_CHECK(cudaMallocHost(&pinned, sizeof(unsigned long long)));
    host_errors_.reset(static_cast<unsigned long long*>(pinned));
    DSV4_CUDA_CHECK(cudaMemsetAsync(device_errors_.get(), 0, sizeof(unsigned long long), stream_));
  }

  ~CudaBuilder() override {
    // Kernels still writing into the arena or the counter must finish before they are freed.
    (void)cudaStreamSynchronize(stream_);
  }

  Backend backend() const override { return Backend::kCuda; }

  // Caller-owned outputs (SPEC §7) take no workspace: nothing but the launches, so that a
  // stream capture records a build as its kernel (and the status check's, when asked).
  BuiltIndices build(const BuildRequest& request) override {
    const BuiltIndices out = place(request);
    const kernels::MixedSparseIndicesArgs args = make_mixed_sparse_indices_args(request, out, device_errors_.get());
    check_kernel_status(kernels::launch_mixed_sparse_indices(args, launch_config_, stream_, request.status));
    return out;
  }

  // SPEC §8 one launch: every request's outputs placed as build() places them, then one launch.
  void build_together(const BuildRequest* requests, int count, BuiltIndices* out) override {
    if (count < 1 || count > kMaxBuildsTogether) {
      throw std::invalid_argument("build_together: " + std::to_string(count) + " requests, expected 1 to " +
                                  std::to_string(kMaxBuildsTogether));
    }
    check_token_plans_together(requests, count);
    kernels::MixedSparseIndicesArgs args[kMaxBuildsTogether];
    for (int i = 0; i < count; ++i) {
      out[i] = place(requests[i]);
      args[i] = make_mixed_sparse_indices_args(requests[i], out[i], device_errors_.get());
      if (requests[i].status != nullptr) {
        check_kernel_status(kernels::launch_metadata_check(args[i], requests[i].status, launch_config_, stream_));
      }
    }
    check_kernel_status(kernels::launch_mixed_sparse_indices_together(args, count, launch_config_, stream_));
  }

  int64_t take_content_errors() override {
    DSV4_CUDA_CHECK(cudaMemcpyAsync(host_errors_.get(), device_errors_.get(),
                                    sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream_));
    DSV4_CUDA_CHECK(cudaMemsetAsync(device_errors_.get(), 0, sizeof(unsigned long long), stream_));
    DSV4_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return static_cast<int64_t>(*host_errors_);
  }

  // Stream-ordered reuse: the next step's kernels on stream_ run after this step's consumers
  // queued on stream_ (consumers on other streams must be ordered by the caller).
  void release_outputs() override { arena_.recycle(); }

  // Stream capture (thread-local mode: other threads' CUDA calls stay legal meanwhile, but none
  // may synchronize the device: device_sync_lock() is held until the capture ends). The legacy
  // default stream cannot be captured.
  void begin_recording(int32_t chains) override {
    if (recording_) throw std::logic_error("begin_recording: already recording");
    check_recording_chains(chains);
    if (stream_ == nullptr) {
      throw std::invalid_argument("recording needs the builder on a stream of its own (the legacy default stream cannot be captured)");
    }
    std::unique_lock<std::shared_mutex> no_device_sync(device_sync_lock());
    DSV4_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    recording_lock_ = std::move(no_device_sync);
    recording_ = true;
    recorded_chains_ = chains;
  }

  std::unique_ptr<RecordedBuilds> end_recording() override {
    if (!recording_) throw std::logic_error("end_recording without begin_recording");
    recording_ = false;
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    recording_lock_ = {};
    DSV4_CUDA_CHECK(ended);
    // The status checks off the builds' chains (nothing in the graph reads their words, and
    // each, ~7.5 us on one SM, held its chain's next build), then the builds in chains at once.
    const void* check = kernels::metadata_check_kernel_entry();
    cudaError_t laid_out = take_off_chain(graph, [check](cudaGraphNode_t node) { return launches_kernel(node, check); });
    if (laid_out == cudaSuccess) laid_out = cut_into_chains(graph, recorded_chains_);
    if (laid_out != cudaSuccess) {
      (void)cudaGetLastError();  // the failed call's error, which the next launch's check would report
      (void)cudaGraphDestroy(graph);
      DSV4_CUDA_CHECK(laid_out);
    }
    return std::make_unique<CudaGraphBuilds>(graph, stream_);
  }

 private:
  // One instantiated graph of the recorded launches; a replay is one cudaGraphLaunch.
  class CudaGraphBuilds final : public RecordedBuilds {
   public:
    CudaGraphBuilds(cudaGraph_t graph, cudaStream_t stream) : graph_(graph), stream_(stream) {
      const cudaError_t status = cudaGraphInstantiate(&exec_, graph_, 0);
      if (status != cudaSuccess) {
        (void)cudaGraphDestroy(graph_);
        DSV4_CUDA_CHECK(status);
      }
    }
    ~CudaGraphBuilds() override {
      (void)cudaStreamSynchronize(stream_);  // a replay in flight still uses the executable graph
      (void)cudaGraphExecDestroy(exec_);
      (void)cudaGraphDestroy(graph_);
    }
    CudaGraphBuilds(const CudaGraphBuilds&) = delete;
    CudaGraphBuilds& operator=(const CudaGraphBuilds&) = delete;
    void replay() override { DSV4_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

   private:
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
    cudaStream_t stream_;
  };


  // Where a build writes: the caller's outputs, or fresh ones from the workspace.
  BuiltIndices place(const BuildRequest& request) {
    if (recording_ && !writes_caller_outputs(request)) {
      throw std::invalid_argument("a recorded build needs caller-owned outputs (request.output.sparse_indices is null)");
    }
    if (writes_caller_outputs(request)) return caller_outputs(request);
    const OutputLayout layout = output_layout(request);
    return place_outputs(layout, arena_.take(layout.total_bytes));
  }

  cudaStream_t stream_;
  int device_ = 0;
  kernels::MixedSparseIndicesLaunchConfig launch_config_;
  StepArena arena_;
  std::unique_ptr<unsigned long long, DeviceDeleter> device_errors_;
  std::unique_ptr<unsigned long long, PinnedDeleter> host_errors_;
  bool recording_ = false;
  int32_t recorded_chains_ = 1;
  std::unique_lock<std::shared_mutex> recording_lock_;  // held while recording
};

}  // namespace

bool cuda_device_present() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed query must not surface as a later launch error
    return false;
  }
  return count > 0;
}

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream) {
  return make_cuda_builder(stream, CudaBuilderOptions{});
}

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream, size_t workspace_bytes) {
  return make_cuda_builder(stream, workspace_bytes, kernels::LaunchShape{});
}

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream, size_t workspace_bytes,
                                                             kernels::LaunchShape forced_shape) {
  CudaBuilderOptions options;
  options.workspace_bytes = workspace_bytes;
  options.forced_shape = forced_shape;
  return make_cuda_builder(stream, options);
}

std::unique_ptr<MixedSparseIndicesBuilder> make_cuda_builder(void* stream, const CudaBuilderOptions& options) {
  return std::make_unique<CudaBuilder>(static_cast<cudaStream_t>(stream), options);
}

}  // namespace dsv4::opt
