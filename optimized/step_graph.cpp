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

// A build's request over the persistent buffers, writing into its caller-owned output: layer
// `layer`'s (seed: whole rows; split: its compressed segment), or (part kWindow) the split
// step's SWA segment, the window part of the SWA-only build. `status`: the build writes its
// kind's word.
BuildRequest graph_request(const StepGraphSpec& spec, int32_t ratio, size_t c4a_layer, RowPart part, bool status,
                           const std::string& what) {
  const LayerKind kind = layer_kind_from_ratio(ratio);
  const C4aLayerInputs* c4a = kind == LayerKind::kC4A ? &spec.c4a.at(c4a_layer) : nullptr;
  BuildRequest r = layer_build_request(spec.capacities, ratio, c4a);
  // An SWA-only build reads no prefill columns; its prefill row capacity is the step's,
  // T_cap - D_cap, as the other kinds': a decode graph's (none) then takes the decode kernel.
  if (kind == LayerKind::kSwaOnly) {
    r.prefill_topk.rows = spec.capacities.num_tokens - spec.capacities.num_decode_tokens;
  }
  r.run_time_sizes = spec.run_time_sizes;
  r.part = part;
  r.output = part == RowPart::kWindow          ? spec.outputs.swa_segment
             : kind == LayerKind::kSwaOnly ? spec.outputs.swa_only
             : kind == LayerKind::kC128A   ? spec.outputs.c128a
                                           : spec.outputs.c4a.at(c4a_layer);
  if (spec.statuses != nullptr && status) r.status = spec.statuses + static_cast<int>(kind);
  if (r.output.sparse_indices == nullptr) reject(what + " has no output buffer");
  validate_request_shape(r);
  return r;
}

std::string layer_name(int32_t layer, LayerKind kind) {
  return std::string("layer ") + std::to_string(layer) + " (" + layer_kind_name(kind) + ")";
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
  if (spec.mode == SharingMode::kSplit) {
    add_range(ranges, spec.outputs.swa_segment.sparse_indices, int64_t{rows} * spec.outputs.swa_segment.row_stride,
              "outputs.swa_segment.sparse_indices");
  }
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
  if (spec.mode == SharingMode::kTailOnly) {
    reject("mode = tail has no graph form (each C4A build overwrites the one before it; record seed or split)");
  }
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

StepGraph::StepGraph(MixedSparseIndicesBuilder& builder, const StepGraphSpec& spec)
    : builder_(builder), mode_(spec.mode), num_layers_(static_cast<int32_t>(spec.compress_ratios.size())) {
  check_spec(spec);
  const bool split = mode_ == SharingMode::kSplit;
  // Every request first, so that a bad spec throws before anything is recorded.
  std::vector<BuildRequest> requests;
  std::vector<LayerKind> kinds;
  bool kind_seen[kLayerKinds] = {false, false, false};
  // Split: the SWA segment (it writes the SWA-only word), then each layer's compressed segment.
  BuildRequest segment;
  if (split && num_layers_ > 0) {
    segment = graph_request(spec, 1, 0, RowPart::kWindow, true, "outputs.swa_segment (split mode)");
    kind_seen[static_cast<int>(LayerKind::kSwaOnly)] = true;
  }
  size_t c4a_layer = 0;
  for (int32_t layer = 0; layer < num_layers_; ++layer) {
    const int32_t ratio = spec.compress_ratios[static_cast<size_t>(layer)];
    const LayerKind kind = layer_kind_from_ratio(ratio);
    bool& seen = kind_seen[static_cast<int>(kind)];
    // The first build of each kind writes its word; same-kind cacheable layers share it (it
    // is part of their cache key), so all of theirs carry it, but the split SWA-only layers'
    // lens-only segments, which leave it to the SWA segment.
    const bool status = split && kind == LayerKind::kSwaOnly ? false : !seen || is_cacheable(kind);
    requests.push_back(
        graph_request(spec, ratio, c4a_layer, split ? RowPart::kCompressed : RowPart::kWhole, status, layer_name(layer, kind)));
    kinds.push_back(kind);
    seen = true;
    c4a_layer += kind == LayerKind::kC4A;
  }
  StepIndexCache cache(builder_);  // the keys hold only capture-time values: shapes, pointers
  builder_.begin_recording(spec.chains);
  try {
    for (size_t layer = 0; layer < requests.size(); ++layer) {
      if (!split) {
        layers_.push_back(cache.get_or_build(kinds[layer], requests[layer]));
        continue;
      }
      SplitIndices indices;
      indices.swa = cache.get_or_build(LayerKind::kSwaOnly, segment);
      indices.swa.sparse_lens = nullptr;  // the segment has no lengths
      indices.compressed = cache.get_or_build(kinds[layer], requests[layer]);
      split_layers_.push_back(indices);
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

const BuiltIndices& StepGraph::layer_indices(int32_t layer) const {
  if (mode_ != SharingMode::kSeed) {
    throw std::logic_error("StepGraph::layer_indices is the seed mode's call; this graph is in split mode "
                           "(layer_split_indices)");
  }
  return layers_.at(static_cast<size_t>(layer));
}

const SplitIndices& StepGraph::layer_split_indices(int32_t layer) const {
  if (mode_ != SharingMode::kSplit) {
    throw std::logic_error("StepGraph::layer_split_indices is the split mode's call; this graph is in seed mode "
                           "(layer_indices)");
  }
  return split_layers_.at(static_cast<size_t>(layer));
}

}  // namespace dsv4::opt
