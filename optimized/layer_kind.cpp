#include "optimized/layer_kind.h"

#include <stdexcept>
#include <string>

namespace dsv4::opt {

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
      throw std::invalid_argument("compress_ratio = " + std::to_string(compress_ratio) +
                                  " names no DeepSeek-V4 layer kind (expected 0 or 1: SWA-only, "
                                  "4: C4A, 128: C128A)");
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

}  // namespace dsv4::opt
