// SPEC §8's outputs, derived from SPEC §3's: what every sharing mode of a layer must equal.
// Split output = the combined matrix cut at column W; a tail-only C4A build's output = the
// combined matrix itself; the shared SWA segment = the SWA-only build of the step.
#pragma once
#include "reference/mixed_sparse_indices.h"

namespace dsv4::ref {

// The two-segment form (FlashMLA / FlashInfer split sparse-MLA): swa_indices = columns
// [0, W), compressed_indices = columns [W, W + P_cap), compressed_lens = sparse_lens - W for
// every row built; a row not built (SPEC §7: a padding row, or one whose metadata breaks the
// checks) has length 0 in every form, so 0 here too (a built row's length is >= W).
struct SplitOutput {
  IndexMatrix swa_indices;         // T x W
  IndexMatrix compressed_indices;  // T x P_cap
  IndexVector compressed_lens;     // T
};
// Throws std::invalid_argument when `window` is outside [0, columns of the output].
SplitOutput split_output(const BuilderOutput& combined, int32_t window);

// The SWA segment's own build (SPEC §8): the inputs of the step's SWA-only layer with `in`'s
// window, SWA cache and decode SWA indices (ratio 1, topk 0, nothing compressed). Its indices
// are the first W columns of every layer's output whose inputs share those three; its content
// errors are the ones that output counts in its window columns (the prefill SWA lookups), which
// a step that builds the segment once counts once.
BuilderInputs window_segment_inputs(const BuilderInputs& in);

}  // namespace dsv4::ref
