// Host backend: the kernels/ row functions run row by row on the CPU, outputs from a step
// arena of host chunks reused across steps (or the caller's, SPEC §7).
#include "optimized/host_builder.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/metadata_checks.h"
#include "kernels/mixed_sparse_indices_row.h"
#include "optimized/host_memory.h"
#include "optimized/kernel_args.h"
#include "optimized/step_arena.h"

namespace dsv4::opt {
namespace {

// Rows [0, T) built, rows [T, T_cap) padding. kChecked: T, D and R come from the run-time
// sizes (all rows padding when they do not fit the capacities), rows are checked.
template <bool kPowerOfTwo, bool kVec4, bool kChecked>
int64_t build_rows(const kernels::MixedSparseIndicesArgs& args) {
  kernels::MixedSparseIndicesArgs step = args;
  if constexpr (kChecked) kernels::resolve_run_time_sizes(step);
  int64_t errors = 0;
  for (int32_t t = 0; t < step.num_tokens; ++t) {
    int32_t row_errors = 0;
    kernels::build_row<kPowerOfTwo, kVec4, kChecked>(step, t, &row_errors);
    errors += row_errors;
  }
  for (int32_t t = step.num_tokens; t < step.num_rows; ++t) kernels::write_padding_row<kVec4>(step, t, 0, 1);
  return errors;
}

template <bool kChecked>
int64_t build_rows_of(const kernels::MixedSparseIndicesArgs& args) {
  if (args.power_of_two_blocks) {
    return args.vector_path ? build_rows<true, true, kChecked>(args) : build_rows<true, false, kChecked>(args);
  }
  return args.vector_path ? build_rows<false, true, kChecked>(args) : build_rows<false, false, kChecked>(args);
}

class HostBuilder final : public MixedSparseIndicesBuilder {
 public:
  HostBuilder() : arena_(ArenaMemory{&allocate_host, &release_host}, kInitialArenaBytes) {}

  Backend backend() const override { return Backend::kHost; }

  BuiltIndices build(const BuildRequest& request) override {
    if (recording_) {
      if (!writes_caller_outputs(request)) {
        throw std::invalid_argument("a recorded build needs caller-owned outputs (request.output.sparse_indices is null)");
      }
      recorded_.push_back(request);
      return caller_outputs(request);
    }
    if (writes_caller_outputs(request)) return run(request, caller_outputs(request));
    const OutputLayout layout = output_layout(request);
    return run(request, place_outputs(layout, arena_.take(layout.total_bytes)));
  }

  int64_t take_content_errors() override {
    const int64_t errors = content_errors_;
    content_errors_ = 0;
    return errors;
  }

  void release_outputs() override { arena_.recycle(); }

  void begin_recording(int32_t chains) override {
    if (recording_) throw std::logic_error("begin_recording: already recording");
    check_recording_chains(chains);
    recording_ = true;
    recorded_chains_ = chains;
    recorded_.clear();
  }

  std::unique_ptr<RecordedBuilds> end_recording() override {
    if (!recording_) throw std::logic_error("end_recording without begin_recording");
    recording_ = false;
    std::vector<BuildRequest> requests = std::exchange(recorded_, {});
    if (recorded_chains_ > 1) std::reverse(requests.begin(), requests.end());
    return std::make_unique<Recording>(*this, std::move(requests));
  }

 private:
  // The host "graph": the recorded requests, run again in their order (outputs caller-owned).
  class Recording final : public RecordedBuilds {
   public:
    Recording(HostBuilder& builder, std::vector<BuildRequest> requests)
        : builder_(builder), requests_(std::move(requests)) {}
    void replay() override {
      for (const BuildRequest& request : requests_) builder_.run(request, caller_outputs(request));
    }

   private:
    HostBuilder& builder_;
    std::vector<BuildRequest> requests_;
  };

  BuiltIndices run(const BuildRequest& request, const BuiltIndices& out) {
    const kernels::MixedSparseIndicesArgs args = make_mixed_sparse_indices_args(request, out, nullptr);
    if (request.status != nullptr) *request.status = kernels::check_metadata_serially(args);
    if (out.num_tokens == 0) return out;
    content_errors_ += request.run_time_sizes != nullptr ? build_rows_of<true>(args) : build_rows_of<false>(args);
    return out;
  }

  static constexpr size_t kInitialArenaBytes = size_t{1} << 20;
  StepArena arena_;
  int64_t content_errors_ = 0;
  bool recording_ = false;
  int32_t recorded_chains_ = 1;
  std::vector<BuildRequest> recorded_;
};

}  // namespace

std::unique_ptr<MixedSparseIndicesBuilder> make_host_builder() {
  return std::make_unique<HostBuilder>();
}

}  // namespace dsv4::opt
