// The one ratio -> kind mapping of the optimized path (SPEC §5).
#pragma once
#include <cstdint>

namespace dsv4::opt {

enum class LayerKind : uint8_t { kSwaOnly, kC4A, kC128A };

// 0 or 1 -> SWA-only, 4 -> C4A, 128 -> C128A; any other ratio throws std::invalid_argument.
LayerKind layer_kind_from_ratio(int32_t compress_ratio);
const char* layer_kind_name(LayerKind kind);  // "SWA-only", "C4A", "C128A"
// SWA-only and C128A layers of one step share inputs; C4A layers never do.
constexpr bool is_cacheable(LayerKind kind) { return kind != LayerKind::kC4A; }

}  // namespace dsv4::opt
