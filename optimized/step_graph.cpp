#include "optimized/step_graph.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "optimized/validation.h"

namespace dsv4::opt {
namespace {

[[noreturn]] void reject(const std::string& message) { throw std::invalid_argument("StepGraph: " + message); }

// Layer `layer`'s request over the persistent buffers, writing into its caller-owned output.
BuildRequest graph_request(const StepGraphSpec& spec, int32_t layer, size_t c4a_layer, bool first_of_kind) {
  const int32_t ratio = spec.compress_ratios[static_cast<size_t>(layer)];
  const LayerKind kind = layer_kind_from_ratio(ratio);
  const C4aLayerInputs* c4a = kind == LayerKind::kC4A ? &spec.c4a.at(c4a_layer) : nullptr;
  BuildRequest r = layer_build_request(spec.capacities, ratio, c4a);
  // An SWA-only build reads no prefill columns; its prefill row capacity is the step's,
  // T_cap - D_cap, as the other kinds': a decode graph's (none) then takes the decode kernel.
  if (kind == LayerKind::kSwaOnly) {
    r.prefill_topk.rows = spec.capacities.num_tokens - spec.capacities.num_decode_tokens;
  }
  r.run_time_sizes = spec.run_time_sizes;
  r.output = kind == LayerKind::kSwaOnly ? spec.outputs.swa_only
             : kind == LayerKind::kC128A ? spec.outputs.c128a
                                         : spec.outputs.c4a.at(c4a_layer);
  // Same-kind cacheable layers must share the word (it is part of their cache key).
  if (spec.statuses != nullptr && (first_of_kind || is_cacheable(kind))) r.status = spec.statuses + static_cast<int>(kind);
  if (r.output.sparse_indices == nullptr) {
    reject(std::string("layer ") + std::to_string(layer) + " (" + layer_kind_name(kind) + ") has no output buffer");
  }
  validate_request_shape(r);
  return r;
}

// The bytes [begin, end) an output occupies: T_cap rows of indices, T_cap lens.
struct ByteRange {
  std::uintptr_t begin, end;
  std::string name;
};

void add_range(std::vector<ByteRange>& ranges, const int32_t* p, int64_t count, std::string name) {
  if (p == nullptr) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  ranges.push_back({begin, begin + static_cast<std::uintptr_t>(count) * sizeof(int32_t), std::move(name)});
}

void add_output(std::vector<ByteRange>& ranges, const OutputView& out, int32_t rows, const std::string& name) {
  add_range(ranges, out.sparse_indices, int64_t{rows} * out.row_stride, name + ".sparse_indices");
  add_range(ranges, out.sparse_lens, rows, name + ".sparse_lens");
}

// Builds that run at once must not write the same memory (nor should any two layers' outputs).
void check_outputs_disjoint(const StepGraphSpec& spec) {
  const int32_t rows = spec.capacities.num_tokens;
  std::vector<ByteRange> ranges;
  add_output(ranges, spec.outputs.swa_only, rows, "outputs.swa_only");
  add_output(ranges, spec.outputs.c128a, rows, "outputs.c128a");
  for (size_t k = 0; k < spec.outputs.c4a.size(); ++k) {
    add_output(ranges, spec.outputs.c4a[k], rows, "outputs.c4a[" + std::to_string(k) + "]");
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    for (size_t j = i + 1; j < ranges.size(); ++j) {
      if (ranges[i].begin < ranges[j].end && ranges[j].begin < ranges[i].end) {
        reject(ranges[i].name + " and " + ranges[j].name + " overlap (every output needs memory of its own)");
      }
    }
  }
}

void check_spec(const StepGraphSpec& spec) {
  if (spec.run_time_sizes == nullptr) reject("run_time_sizes is null (a replay reads T, D and R from it)");
  if (spec.chains < 1) reject("chains must be >= 1, got " + std::to_string(spec.chains));
  size_t c4a_layers = 0;
  for (const int32_t ratio : spec.compress_ratios) c4a_layers += layer_kind_from_ratio(ratio) == LayerKind::kC4A;
  if (spec.c4a.size() != c4a_layers) {
    reject("c4a has " + std::to_string(spec.c4a.size()) + " entries, the schedule " + std::to_string(c4a_layers) +
           " C4A layers");
  }
  if (spec.outputs.c4a.size() != c4a_layers) {
    reject("outputs.c4a has " + std::to_string(spec.outputs.c4a.size()) + " entries, the schedule " +
           std::to_string(c4a_layers) + " C4A layers");
  }
  check_outputs_disjoint(spec);
}

}  // namespace

StepGraph::StepGraph(MixedSparseIndicesBuilder& builder, const StepGraphSpec& spec) : builder_(builder) {
  check_spec(spec);
  // Every request first, so that a bad spec throws before anything is recorded.
  std::vector<BuildRequest> requests;
  std::vector<LayerKind> kinds;
  bool kind_seen[kLayerKinds] = {false, false, false};
  size_t c4a_layer = 0;
  for (int32_t layer = 0; layer < static_cast<int32_t>(spec.compress_ratios.size()); ++layer) {
    const LayerKind kind = layer_kind_from_ratio(spec.compress_ratios[static_cast<size_t>(layer)]);
    bool& seen = kind_seen[static_cast<int>(kind)];
    requests.push_back(graph_request(spec, layer, c4a_layer, !seen));
    kinds.push_back(kind);
    seen = true;
    c4a_layer += kind == LayerKind::kC4A;
  }
  StepIndexCache cache(builder_);  // the keys hold only capture-time values: shapes, pointers
  builder_.begin_recording(spec.chains);
  try {
    for (size_t layer = 0; layer < requests.size(); ++layer) {
      layers_.push_back(cache.get_or_build(kinds[layer], requests[layer]));
    }
  } catch (...) {
    try {
      (void)builder_.end_recording();
    } catch (...) {
      // The first error is the one to report; a capture it invalidated cannot end cleanly.
    }
    throw;
  }
  recorded_ = builder_.end_recording();
  builds_ = cache.builder_calls();
}

}  // namespace dsv4::opt
