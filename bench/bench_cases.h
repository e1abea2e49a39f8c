// The step shapes, models and layer kinds every benchmark program sweeps (and the step tests
// check on every backend), and the staging of one step in a backend (shared by kernel_bench,
// step_bench, ttft_report and bench_inputs).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/backend_step.h"
#include "harness/step_factory.h"
#include "optimized/builder.h"
#include "reference/model_schedule.h"

namespace dsv4::bench {

// One benchmark case: a name usable in a benchmark filter and the step it stands for.
struct BenchCase {
  std::string name;  // e.g. "prefill8K_ctx120K"
  std::string description;
  harness::StepShape shape;
  // Whether the step has prefill rows (the rows a token plan covers).
  bool has_prefill_rows() const { return shape.num_prefills > 0 && shape.prefill_tokens_each > 0; }
};

// The cases of issues 3 and 10: decode-only (64 and 256 decodes at 8K and 32K), prefill-only
// (with and without long prior context) and a mixed step.
const std::vector<BenchCase>& bench_cases();
const BenchCase& bench_case(const std::string& name);  // throws std::invalid_argument

// "flash" -> deepseek_v4_flash(), "pro" -> deepseek_v4_pro(); else std::invalid_argument.
ref::ModelSchedule model_schedule(const std::string& model);
const std::vector<std::string>& model_names();  // {"flash", "pro"}

// The distinct layer kinds present in `schedule`, in SWA-only, C4A, C128A order.
std::vector<ref::LayerKind> kinds_present(const ref::ModelSchedule& schedule);
// The compress ratio a layer of `kind` is configured with (SWA-only: 0).
int32_t ratio_of(ref::LayerKind kind);
// A one-layer schedule of `kind` with `model`'s window and top-k: what kernel_bench builds.
ref::ModelSchedule single_layer_schedule(const ref::ModelSchedule& model, ref::LayerKind kind);

// The host side of a benchmark step: the step of `shape` and one C4A indexer output per layer
// of `schedule`. The C4A outputs are generated once (make_c4a_indexer_outputs for one C4A
// layer, seed shape.seed + 17) and copied to every C4A layer: each layer gets its own buffers
// with the same statistics, at a fraction of the setup cost. Entries of other layers are empty.
struct HostStep {
  ref::Step step;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;
};
HostStep make_host_step(const harness::StepShape& shape, const ref::ModelSchedule& schedule);
// The reference's inputs of layer `layer` of a benchmark step (what kernel_bench verifies
// against and counts bytes of; bench_inputs exports exactly these).
ref::BuilderInputs bench_layer_inputs(const ref::Step& step, const ref::ModelSchedule& schedule,
                                      const std::vector<ref::C4aIndexerOutput>& c4a_per_layer,
                                      int32_t layer);

// A step staged in one backend for every layer of `schedule` (the step of make_host_step).
struct StagedStep {
  ref::Step step;
  ref::ModelSchedule schedule;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // empty unless keep_host was set
  std::unique_ptr<harness::BackendStep> staged;
};
// keep_host: keep the host C4A outputs (for verification and byte counting); otherwise
// they are dropped once uploaded to save host memory.
std::unique_ptr<StagedStep> stage_step(opt::Backend backend, const harness::StepShape& shape,
                                       const ref::ModelSchedule& schedule, bool keep_host);

// Builder for a backend: CUDA on `stream` (a cudaStream_t), host otherwise.
std::unique_ptr<opt::MixedSparseIndicesBuilder> make_builder(opt::Backend backend, void* stream);

// "64x1 decodes @8K + 1x8192 prefill after 0" style summary of a shape.
std::string describe(const harness::StepShape& shape);

}  // namespace dsv4::bench
