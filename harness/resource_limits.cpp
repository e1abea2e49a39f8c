#include "harness/resource_limits.h"

#include <algorithm>
#include <cstdio>

#include "harness/errors.h"

namespace dsv4::harness {

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  std::string s = std::to_string(bytes) + " bytes";
  if (bytes >= 1024) {
    double v = static_cast<double>(bytes) / 1024;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
      v /= 1024;
      ++u;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, " (%.1f %s)", v, units[u]);
    s += buffer;
  }
  return s;
}

StepFootprint check_step_resources(const ref::Step& step, const ref::ModelSchedule& schedule,
                                   const std::vector<ref::C4aIndexerOutput>& c4a_per_layer,
                                   const ResourceLimits& limits, const std::string& where) {
  const auto fail = [&where](const std::string& what) { throw InputError(where + ": " + what); };
  const int32_t layers = schedule.num_layers();
  if (layers > limits.max_layers) {
    fail("the schedule has " + std::to_string(layers) + " layers, above the limit of " +
         std::to_string(limits.max_layers) + " (max_layers; DeepSeek-V4 has 43 or 61)");
  }
  const int32_t W = schedule.window;
  if (W > limits.max_window) {
    fail("window = " + std::to_string(W) + ": above the limit of " + std::to_string(limits.max_window) +
         " (max_window, the models' maximum context)");
  }
  const int32_t T = step.num_tokens();
  int32_t max_pos = -1;
  for (int32_t t = 0; t < T; ++t) max_pos = std::max(max_pos, ref::token_position(step, t));
  int64_t c128a_width = -1;  // C128A layers: P = E (a multiple of 128), computed once

  StepFootprint f;
  for (int32_t l = 0; l < layers; ++l) {
    const int32_t ratio = schedule.compress_ratios[static_cast<size_t>(l)];
    const ref::LayerKind kind = ref::layer_kind_from_ratio(ratio);
    int64_t P = 0;
    if (kind == ref::LayerKind::kC128A) {
      if (c128a_width < 0) c128a_width = ref::c128a_effective_width(max_pos, step.max_model_len);
      P = c128a_width;
    } else if (kind == ref::LayerKind::kC4A) {
      const int64_t kd =
          static_cast<size_t>(l) < c4a_per_layer.size() ? c4a_per_layer[static_cast<size_t>(l)].decode_local.cols() : 0;
      P = (std::max<int64_t>(schedule.c4a_topk, kd) + 3) / 4 * 4;
    }
    const int64_t width = int64_t{W} + P;
    if (width > f.widest_row) {
      f.widest_row = width;
      f.widest_layer = l;
    }
    if (width > limits.max_row_width) {
      fail("layer " + std::to_string(l) + " (" + ref::layer_kind_name(kind) + "): output rows of W + P = " +
           std::to_string(W) + " + " + std::to_string(P) + " = " + std::to_string(width) +
           " columns, above the limit of " + std::to_string(limits.max_row_width) + " (max_row_width)");
    }
    // width <= 2^21 and T < 2^31: one layer stays below 2^55 bytes, no overflow.
    const uint64_t layer_bytes = static_cast<uint64_t>(T) * static_cast<uint64_t>(width + 1) * 4;
    f.output_bytes += layer_bytes;
    if (f.output_bytes > limits.max_step_output_bytes) {
      fail("the builder outputs of " + std::to_string(T) + " tokens reach " + format_bytes(f.output_bytes) +
           " by layer " + std::to_string(l) + " of " + std::to_string(layers) + " (rows up to " +
           std::to_string(f.widest_row) + " columns), above the limit of " +
           format_bytes(limits.max_step_output_bytes) + " (--max-step-bytes)");
    }
  }
  return f;
}

void check_persistent_resources(const PersistentStep& p, const ref::ModelSchedule& schedule,
                                const ResourceLimits& limits, const std::string& where) {
  const int64_t T_cap = p.token_capacity();
  uint64_t bytes = 0;
  for (int32_t l = 0; l < schedule.num_layers(); ++l) {
    const ref::LayerKind kind = ref::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(l)]);
    int64_t P = 0;
    if (kind == ref::LayerKind::kC128A) P = p.c128a_capacity;
    if (kind == ref::LayerKind::kC4A) {
      const int64_t kd = static_cast<size_t>(l) < p.c4a_per_layer.size() ? p.c4a_per_layer[static_cast<size_t>(l)].decode_local.cols() : 0;
      P = std::max<int64_t>(schedule.c4a_topk, kd);
    }
    const int64_t width = int64_t{schedule.window} + (P + 3) / 4 * 4;
    if (width > limits.max_row_width) {
      throw InputError(where + ": layer " + std::to_string(l) + " (" + ref::layer_kind_name(kind) +
                       ") of the step graph: output rows of " + std::to_string(width) + " columns (C128A at P_cap = " +
                       std::to_string(p.c128a_capacity) + "), above the limit of " + std::to_string(limits.max_row_width) +
                       " (max_row_width)");
    }
    bytes += static_cast<uint64_t>(T_cap) * static_cast<uint64_t>(width + p.output_row_padding + 1) * 4;
    if (bytes > limits.max_step_output_bytes) {
      throw InputError(where + ": the step graph's outputs of T_cap = " + std::to_string(T_cap) + " rows reach " +
                       format_bytes(bytes) + " by layer " + std::to_string(l) + ", above the limit of " +
                       format_bytes(limits.max_step_output_bytes) + " (--max-step-bytes)");
    }
  }
}

}  // namespace dsv4::harness
