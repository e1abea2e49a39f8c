#include "harness/sharing_plan.h"

#include <map>
#include <tuple>

#include "reference/sharing_modes.h"

namespace dsv4::harness {
namespace {

// What tells two C4A layers' builds apart besides their source: top-k and input widths.
using C4aShape = std::tuple<int32_t, Eigen::Index, Eigen::Index>;

C4aShape c4a_shape(const StepCase& c, int32_t layer) {
  const ref::C4aIndexerOutput& out = c.c4a_per_layer.at(static_cast<size_t>(layer));
  return {c4a_topk(c.layout, layer, c.schedule.c4a_topk), out.decode_local.cols(), out.prefill_topk.cols()};
}

}  // namespace

SharingPlan sharing_plan(const StepCase& c) {
  SharingPlan plan;
  const int32_t layers = c.schedule.num_layers();
  plan.group.assign(static_cast<size_t>(layers), -1);
  plan.tail_buffer.assign(static_cast<size_t>(layers), -1);
  int32_t swa_group = -1, c128a_group = -1;
  std::map<std::pair<int32_t, C4aShape>, int32_t> sourced;
  std::map<C4aShape, int32_t> tail_buffers;
  for (int32_t l = 0; l < layers; ++l) {
    int32_t& group = plan.group[static_cast<size_t>(l)];
    switch (ref::layer_kind_from_ratio(c.schedule.compress_ratios[static_cast<size_t>(l)])) {
      case ref::LayerKind::kSwaOnly:
        plan.swa_only = true;
        group = swa_group < 0 ? (swa_group = plan.groups++) : swa_group;
        break;
      case ref::LayerKind::kC128A:
        plan.c128a = true;
        group = c128a_group < 0 ? (c128a_group = plan.groups++) : c128a_group;
        break;
      case ref::LayerKind::kC4A: {
        const int32_t source = c4a_source(c.layout, l);
        if (source >= 0) {
          const auto found = sourced.emplace(std::pair{source, c4a_shape(c, l)}, plan.groups);
          if (found.second) ++plan.groups;
          group = found.first->second;
          break;
        }
        group = plan.groups++;
        if (plan.first_unsourced_c4a < 0) plan.first_unsourced_c4a = l;
        const auto buffer = tail_buffers.emplace(c4a_shape(c, l), static_cast<int32_t>(tail_buffers.size()));
        plan.tail_buffer[static_cast<size_t>(l)] = buffer.first->second;
        break;
      }
    }
  }
  return plan;
}

ExpectedCalls expected_calls(const SharingPlan& plan, opt::SharingMode mode, bool one_launch, bool cached) {
  const auto layers = static_cast<int64_t>(plan.group.size());
  if (!cached) {
    const int64_t builds = mode == opt::SharingMode::kSplit ? 2 * layers : layers;
    return {builds, builds};
  }
  const bool segment = mode == opt::SharingMode::kSplit && layers > 0;
  const bool tail_window = mode == opt::SharingMode::kTailOnly && one_launch && plan.first_unsourced_c4a >= 0;
  ExpectedCalls calls;
  calls.builds = plan.groups + (segment ? 1 : 0) + (tail_window ? 1 : 0);
  calls.launches = calls.builds;
  if (one_launch) {
    const int64_t together = (plan.swa_only ? 1 : 0) + (plan.c128a ? 1 : 0) + (segment ? 1 : 0) + (tail_window ? 1 : 0);
    if (together > 1) calls.launches -= together - 1;
  }
  return calls;
}

int64_t expected_content_errors(const SharingPlan& plan, opt::SharingMode mode, bool one_launch, bool cached,
                                const std::vector<int64_t>& layer_errors, int64_t window_errors) {
  const size_t layers = plan.group.size();
  int64_t total = 0;
  if (!cached) {  // every layer built whole (split: its segment and its compressed part)
    for (int64_t e : layer_errors) total += e;
    return total;
  }
  const bool split = mode == opt::SharingMode::kSplit;
  const bool tail = mode == opt::SharingMode::kTailOnly;
  if (split && layers > 0) total += window_errors;  // the one SWA segment
  const bool tail_window = tail && one_launch && plan.first_unsourced_c4a >= 0;
  const int32_t windowed_buffer = tail_window ? plan.tail_buffer[static_cast<size_t>(plan.first_unsourced_c4a)] : -1;
  if (tail_window) total += window_errors;  // that buffer's window columns
  std::vector<bool> group_built(static_cast<size_t>(plan.groups), false);
  std::map<int32_t, bool> buffer_made;
  for (size_t l = 0; l < layers; ++l) {
    const int32_t buffer = plan.tail_buffer[l];
    if (tail && buffer >= 0) {  // whole when it makes its buffer, else the tail alone
      const bool made = buffer == windowed_buffer || buffer_made[buffer];
      total += made ? layer_errors[l] - window_errors : layer_errors[l];
      buffer_made[buffer] = true;
      continue;
    }
    if (group_built[static_cast<size_t>(plan.group[l])]) continue;  // a hit counts nothing
    group_built[static_cast<size_t>(plan.group[l])] = true;
    total += split ? layer_errors[l] - window_errors : layer_errors[l];
  }
  return total;
}

int64_t window_content_errors(const StepCase& c) {
  if (c.schedule.num_layers() == 0) return 0;
  const ref::C4aIndexerOutput* c4a = c.c4a_per_layer.empty() ? nullptr : &c.c4a_per_layer[0];
  const ref::BuilderInputs layer0 = ref::layer_builder_inputs(c.step, c.schedule, 0, c4a);
  return ref::build_mixed_sparse_indices(ref::window_segment_inputs(layer0)).content_errors;
}

}  // namespace dsv4::harness
