// Layer kinds (SPEC §5) and the DeepSeek-V4 schedules (SPEC §1), from the configs' lists.
#include "reference/model_schedule.h"

#include <algorithm>

#include "reference/step_structure.h"

namespace dsv4::ref {

LayerKind layer_kind_from_ratio(int32_t compress_ratio) {
  switch (compress_ratio) {
    case 0:
    case 1:
      return LayerKind::kSwaOnly;
    case 4:
      return LayerKind::kC4A;
    case 128:
      return LayerKind::kC128A;
    default:
      reject("compress_ratio = " + std::to_string(compress_ratio) +
             ": not a DeepSeek-V4 layer kind (0 or 1: SWA-only, 4: C4A, 128: C128A)");
  }
}

const char* layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::kSwaOnly:
      return "SWA-only";
    case LayerKind::kC4A:
      return "C4A";
    case LayerKind::kC128A:
      return "C128A";
  }
  return "unknown";
}

int32_t ModelSchedule::count(LayerKind kind) const {
  return static_cast<int32_t>(std::count_if(compress_ratios.begin(), compress_ratios.end(),
                                            [kind](int32_t ratio) { return layer_kind_from_ratio(ratio) == kind; }));
}

namespace {

// The configs list one ratio per layer plus a trailing entry for the next-token-prediction
// layer, which is not part of the main step.
std::vector<int32_t> main_step_layers(std::vector<int32_t> config_compress_ratios) {
  config_compress_ratios.pop_back();
  return config_compress_ratios;
}

}  // namespace

ModelSchedule deepseek_v4_flash() {
  ModelSchedule s;
  s.name = "DeepSeek-V4-Flash";
  // compress_ratios: 2 SWA-only, then C4A / C128A alternating; last entry = MTP layer.
  s.compress_ratios = main_step_layers({0,   0,                                        //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,                                             //
                                        0});
  s.window = 128;
  s.c4a_topk = 512;
  s.main_block_size = 256;
  return s;
}

ModelSchedule deepseek_v4_pro() {
  ModelSchedule s;
  s.name = "DeepSeek-V4-Pro";
  // compress_ratios: 2 C128A, then C4A / C128A alternating; last entry = MTP layer.
  s.compress_ratios = main_step_layers({128, 128,                                      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128, 4, 128,      //
                                        4,   128, 4, 128, 4, 128, 4, 128,              //
                                        4,                                             //
                                        0});
  s.window = 128;
  s.c4a_topk = 1024;
  s.main_block_size = 256;
  return s;
}

}  // namespace dsv4::ref
