// Resource limits of one step, checked before anything of the step's size is allocated: the
// window, the width of an output row, the number of layers and the bytes of every layer's
// builder output together. `dsv4 verify` checks every generated step against them and
// `dsv4 replay` every capture; a step past a limit is invalid input (exit 2), and the
// message names the limit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/step_case.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

struct ResourceLimits {
  // --max-step-bytes: sparse_indices + sparse_lens of every layer of the step. The check
  // holds the reference's outputs and a backend's at once, so peak memory is about 3x this.
  uint64_t max_step_output_bytes = uint64_t{1} << 30;
  int32_t max_window = 1 << 20;     // the models' maximum context (SPEC §1)
  int64_t max_row_width = 1 << 21;  // W + P columns of one output row
  int32_t max_layers = 1024;        // DeepSeek-V4 has 43 (Flash) or 61 (Pro)
};

// Limit range of --max-step-bytes.
constexpr uint64_t kMinStepOutputBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxStepOutputBytes = uint64_t{64} << 30;

// What a step's builds produce, counted without building anything.
struct StepFootprint {
  uint64_t output_bytes = 0;  // every layer's sparse_indices and sparse_lens
  int64_t widest_row = 0;     // the largest W + P
  int32_t widest_layer = -1;
};

// SPEC §3/§6 widths for every layer. The step must be structurally valid (C128A's width
// depends on its largest position); throws InputError when a limit is passed, naming the
// limit, the layer and `where` (e.g. "capture DIR" or "verify step 12").
StepFootprint check_step_resources(const ref::Step& step, const ref::ModelSchedule& schedule,
                                   const std::vector<ref::C4aIndexerOutput>& c4a_per_layer,
                                   const ResourceLimits& limits, const std::string& where);

// The step graph of a step in persistent buffers (SPEC §7): every layer's caller-owned output
// at T_cap rows of its capacity width (C128A: W + P_cap) plus the row padding, against the same
// limits.
void check_persistent_resources(const PersistentStep& persistent, const ref::ModelSchedule& schedule,
                                const ResourceLimits& limits, const std::string& where);

// "1073741824 bytes (1.0 GiB)".
std::string format_bytes(uint64_t bytes);

}  // namespace dsv4::harness
