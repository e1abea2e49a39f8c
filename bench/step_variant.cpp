#include "bench/step_variant.h"

#include <stdexcept>
#include <vector>

namespace dsv4::bench {
namespace {

// The first C4A layer: its inputs give a tail-only one launch the buffer's shape.
const opt::C4aLayerInputs* first_c4a(const StagedStep& s) {
  for (int32_t l = 0; l < s.schedule.num_layers(); ++l)
    if (s.staged->c4a(l) != nullptr) return s.staged->c4a(l);
  return nullptr;
}

}  // namespace

std::string StepVariant::mode_name() const {
  if (!cached) return "uncached";
  return std::string(opt::sharing_mode_name(mode)) + (one_launch ? "_one_launch" : "");
}

StepVariant cached_variant_from_name(const std::string& name) {
  std::string known;
  for (bool one_launch : {false, true}) {
    for (opt::SharingMode mode : {opt::SharingMode::kSeed, opt::SharingMode::kSplit, opt::SharingMode::kTailOnly}) {
      const StepVariant v{true, mode, one_launch};
      if (v.mode_name() == name) return v;
      known += (known.empty() ? "" : ", ") + v.mode_name();
    }
  }
  throw std::invalid_argument("unknown mode '" + name + "' (" + known + ")");
}

void index_every_layer(opt::StepIndexer& indexer, const StagedStep& s, const StepVariant& v,
                       const std::function<void()>& after_layer) {
  const std::vector<int32_t>& ratios = s.schedule.compress_ratios;
  if (v.one_launch) indexer.build_cacheable_together(ratios, first_c4a(s));
  for (int32_t l = 0; l < static_cast<int32_t>(ratios.size()); ++l) {
    const int32_t ratio = ratios[static_cast<size_t>(l)];
    // The outputs are not read: each call's builds are its side effects.
    switch (v.mode) {
      case opt::SharingMode::kSeed:
        (void)indexer.layer_indices(ratio, s.staged->c4a(l));
        break;
      case opt::SharingMode::kSplit:
        (void)indexer.layer_split_indices(ratio, s.staged->c4a(l));
        break;
      case opt::SharingMode::kTailOnly:
        (void)indexer.layer_tail_indices(ratio, s.staged->c4a(l)).get();
        break;
    }
    if (after_layer) after_layer();
  }
}

StepCounts finish_step(opt::StepIndexer& indexer) {
  StepCounts out;
  out.launches = indexer.cache().launches();
  out.builder_calls = indexer.cache().builder_calls();
  out.content_errors = indexer.content_errors();
  indexer.end_step();
  return out;
}

harness::ExpectedCalls expected_step_calls(const ref::ModelSchedule& schedule, const StepVariant& v) {
  harness::StepCase shape_only;  // the schedule and the C4A widths: what the counts depend on
  shape_only.schedule = schedule;
  shape_only.c4a_per_layer.resize(static_cast<size_t>(schedule.num_layers()));
  for (ref::C4aIndexerOutput& c4a : shape_only.c4a_per_layer) {
    c4a.decode_local.resize(0, schedule.c4a_topk);
    c4a.prefill_topk.resize(0, schedule.c4a_topk);
  }
  return harness::expected_calls(harness::sharing_plan(shape_only), v.mode, v.one_launch, v.cached);
}

}  // namespace dsv4::bench
