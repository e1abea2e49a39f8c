// Host backend: the kernels/ row functions run row by row on the CPU, outputs from a step
// arena of host chunks reused across steps.
#include "optimized/host_builder.h"

#include <cstdint>

#include "kernels/mixed_sparse_indices_row.h"
#include "optimized/host_memory.h"
#include "optimized/kernel_args.h"
#include "optimized/step_arena.h"

namespace dsv4::opt {
namespace {

template <bool kPowerOfTwo, bool kVec4>
int64_t build_rows(const kernels::MixedSparseIndicesArgs& args) {
  int64_t errors = 0;
  for (int32_t t = 0; t < args.num_tokens; ++t) {
    int32_t row_errors = 0;
    kernels::build_row<kPowerOfTwo, kVec4>(args, t, &row_errors);
    errors += row_errors;
  }
  return errors;
}

class HostBuilder final : public MixedSparseIndicesBuilder {
 public:
  HostBuilder() : arena_(ArenaMemory{&allocate_host, &release_host}, kInitialArenaBytes) {}

  Backend backend() const override { return Backend::kHost; }

  BuiltIndices build(const BuildRequest& request) override {
    const OutputLayout layout = output_layout(request);
    const BuiltIndices out = place_outputs(layout, arena_.take(layout.total_bytes));
    if (out.num_tokens == 0) return out;
    const kernels::MixedSparseIndicesArgs args =
        make_mixed_sparse_indices_args(request, out.sparse_indices, out.sparse_lens, nullptr);
    if (args.power_of_two_blocks) {
      content_errors_ += args.vector_path ? build_rows<true, true>(args) : build_rows<true, false>(args);
    } else {
      content_errors_ += args.vector_path ? build_rows<false, true>(args) : build_rows<false, false>(args);
    }
    return out;
  }

  int64_t take_content_errors() override {
    const int64_t errors = content_errors_;
    content_errors_ = 0;
    return errors;
  }

  void release_outputs() override { arena_.recycle(); }

 private:
  static constexpr size_t kInitialArenaBytes = size_t{1} << 20;
  StepArena arena_;
  int64_t content_errors_ = 0;
};

}  // namespace

std::unique_ptr<MixedSparseIndicesBuilder> make_host_builder() {
  return std::make_unique<HostBuilder>();
}

}  // namespace dsv4::opt
