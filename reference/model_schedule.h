// Layer kinds and the DeepSeek-V4 layer schedules (SPEC §1, §5). The reference owns its
// own copy of the ratio -> kind mapping so it can disagree with optimized/.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "reference/step.h"

namespace dsv4::ref {

enum class LayerKind { kSwaOnly, kC4A, kC128A };

// 0 or 1 -> SWA-only, 4 -> C4A, 128 -> C128A; anything else throws std::invalid_argument.
LayerKind layer_kind_from_ratio(int32_t compress_ratio);
const char* layer_kind_name(LayerKind kind);  // "SWA-only", "C4A", "C128A"

struct ModelSchedule {
  std::string name;
  std::vector<int32_t> compress_ratios;  // one per layer of the main step
  int32_t window = 128;
  int32_t c4a_topk = 512;
  int32_t main_block_size = 256;

  int32_t num_layers() const { return static_cast<int32_t>(compress_ratios.size()); }
  int32_t count(LayerKind kind) const;
};

// Built from the configs' compress_ratios lists (trailing next-token-prediction entry dropped).
ModelSchedule deepseek_v4_flash();  // 43 layers: 2 SWA-only, 21 C4A, 20 C128A; top-k 512
ModelSchedule deepseek_v4_pro();    // 61 layers: 0 SWA-only, 30 C4A, 31 C128A; top-k 1024

// The builder inputs of layer `layer` of `schedule` for `step` (SPEC §6): SWA-only gets
// ratio 1, topk 0; C128A the step's C128A metadata (global decode form with lens, topk E);
// C4A `c4a` (local decode form with decode_valid, topk schedule.c4a_topk).
BuilderInputs layer_builder_inputs(const Step& step, const ModelSchedule& schedule, int32_t layer,
                                   const C4aIndexerOutput* c4a);

// Called with each layer's builder inputs before its build: how a caller builds what it staged
// differently from SPEC §6's defaults (an optional input left out, another top-k).
using LayerInputsEdit = std::function<void(int32_t layer, BuilderInputs& inputs)>;

// The uncached per-step run: one build per layer, in layer order. c4a_per_layer has one entry
// per layer (entries of non-C4A layers are ignored).
std::vector<BuilderOutput> run_step_uncached(const Step& step, const ModelSchedule& schedule,
                                             const std::vector<C4aIndexerOutput>& c4a_per_layer,
                                             const LayerInputsEdit& edit = nullptr);

}  // namespace dsv4::ref
