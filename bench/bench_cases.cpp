#include "bench/bench_cases.h"

#include <sstream>
#include <stdexcept>

#include "optimized/cuda_builder.h"
#include "optimized/host_builder.h"

namespace dsv4::bench {
namespace {

harness::StepShape decodes(int32_t count, int32_t context) {
  harness::StepShape s;
  s.num_decodes = count;
  s.decode_context = context;
  return s;
}

harness::StepShape prefill(int32_t tokens, int32_t prior_context) {
  harness::StepShape s;
  s.num_prefills = 1;
  s.prefill_tokens_each = tokens;
  s.prefill_context = prior_context;
  return s;
}

}  // namespace

const std::vector<BenchCase>& bench_cases() {
  static const std::vector<BenchCase> cases = [] {
    harness::StepShape mixed = prefill(8192, 0);
    mixed.num_decodes = 32;
    mixed.decode_context = 8192;
    return std::vector<BenchCase>{
        {"decode64_ctx8K", "64 decodes at 8K context", decodes(64, 8192)},
        {"decode64_ctx32K", "64 decodes at 32K context", decodes(64, 32768)},
        {"decode256_ctx8K", "256 decodes at 8K context", decodes(256, 8192)},
        {"decode256_ctx32K", "256 decodes at 32K context", decodes(256, 32768)},
        {"prefill1K", "prefill 1K", prefill(1024, 0)},
        {"prefill8K", "prefill 8K", prefill(8192, 0)},
        {"prefill8K_ctx120K", "prefill 8K after 120K context", prefill(8192, 120 * 1024)},
        {"decode32_prefill8K", "32 decodes at 8K + prefill 8K", mixed},
    };
  }();
  return cases;
}

const BenchCase& bench_case(const std::string& name) {
  for (const BenchCase& c : bench_cases()) {
    if (c.name == name) return c;
  }
  throw std::invalid_argument("unknown bench case '" + name + "'");
}

ref::ModelSchedule model_schedule(const std::string& model) {
  if (model == "flash") return ref::deepseek_v4_flash();
  if (model == "pro") return ref::deepseek_v4_pro();
  throw std::invalid_argument("unknown model '" + model + "' (expected flash or pro)");
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"flash", "pro"};
  return names;
}

std::vector<ref::LayerKind> kinds_present(const ref::ModelSchedule& schedule) {
  std::vector<ref::LayerKind> kinds;
  for (ref::LayerKind k : {ref::LayerKind::kSwaOnly, ref::LayerKind::kC4A, ref::LayerKind::kC128A}) {
    if (schedule.count(k) > 0) kinds.push_back(k);
  }
  return kinds;
}

int32_t ratio_of(ref::LayerKind kind) {
  switch (kind) {
    case ref::LayerKind::kSwaOnly: return 0;
    case ref::LayerKind::kC4A: return 4;
    case ref::LayerKind::kC128A: return 128;
  }
  throw std::invalid_argument("ratio_of: unknown layer kind");
}

ref::ModelSchedule single_layer_schedule(const ref::ModelSchedule& model, ref::LayerKind kind) {
  ref::ModelSchedule s = model;
  s.name = model.name + "/" + ref::layer_kind_name(kind);
  s.compress_ratios = {ratio_of(kind)};
  return s;
}

HostStep make_host_step(const harness::StepShape& shape, const ref::ModelSchedule& schedule) {
  HostStep host;
  host.step = harness::make_step(shape);
  const int32_t layers = schedule.num_layers();
  host.c4a_per_layer.resize(static_cast<size_t>(layers));
  if (schedule.count(ref::LayerKind::kC4A) > 0) {
    const ref::ModelSchedule one = single_layer_schedule(schedule, ref::LayerKind::kC4A);
    const std::vector<ref::C4aIndexerOutput> generated =
        harness::make_c4a_indexer_outputs(host.step, one, shape.seed + 17);
    for (int32_t l = 0; l < layers; ++l) {
      if (ref::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(l)]) ==
          ref::LayerKind::kC4A) {
        host.c4a_per_layer[static_cast<size_t>(l)] = generated.front();
      }
    }
  }
  return host;
}

ref::BuilderInputs bench_layer_inputs(const ref::Step& step, const ref::ModelSchedule& schedule,
                                      const std::vector<ref::C4aIndexerOutput>& c4a_per_layer,
                                      int32_t layer) {
  const bool c4a = ref::layer_kind_from_ratio(schedule.compress_ratios.at(static_cast<size_t>(layer))) ==
                   ref::LayerKind::kC4A;
  return ref::layer_builder_inputs(step, schedule, layer,
                                   c4a ? &c4a_per_layer.at(static_cast<size_t>(layer)) : nullptr);
}

std::unique_ptr<StagedStep> stage_step(opt::Backend backend, const harness::StepShape& shape,
                                       const ref::ModelSchedule& schedule, bool keep_host) {
  auto staged = std::make_unique<StagedStep>();
  HostStep host = make_host_step(shape, schedule);
  staged->step = std::move(host.step);
  staged->schedule = schedule;
  staged->staged =
      std::make_unique<harness::BackendStep>(backend, staged->step, schedule, host.c4a_per_layer);
  if (keep_host) staged->c4a_per_layer = std::move(host.c4a_per_layer);
  return staged;
}

std::unique_ptr<opt::MixedSparseIndicesBuilder> make_builder(opt::Backend backend, void* stream) {
  if (backend == opt::Backend::kCuda) return opt::make_cuda_builder(stream);
  return opt::make_host_builder();
}

std::string describe(const harness::StepShape& shape) {
  std::ostringstream os;
  if (shape.num_decodes > 0) {
    os << shape.num_decodes << "x" << shape.decode_tokens_each << " decodes @" << shape.decode_context;
  }
  if (shape.num_prefills > 0) {
    if (shape.num_decodes > 0) os << " + ";
    os << shape.num_prefills << "x" << shape.prefill_tokens_each << " prefill after "
       << shape.prefill_context;
  }
  return os.str();
}

}  // namespace dsv4::bench
