// What SPEC §5 and §8 make the per-step cache do for one case, worked out from the schedule and
// the case alone (never from the optimized path's cache keys, so a wrong key cannot hide):
// which layers share one build, how many builds and builder calls each mode takes, and the
// content errors it counts when the shared SWA segment counts its window's errors once.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/step_case.h"
#include "optimized/step_indexer.h"

namespace dsv4::harness {

struct SharingPlan {
  // Per layer: layers of one group share one build (SWA-only layers, C128A layers, C4A layers
  // of one (index source, top-k, widths)); an unsourced C4A layer is a group of its own.
  std::vector<int32_t> group;
  int32_t groups = 0;
  // Per layer: the tail-only buffer of an unsourced C4A layer (one per (top-k, widths)), else -1.
  std::vector<int32_t> tail_buffer;
  bool swa_only = false, c128a = false;  // kinds present
  int32_t first_unsourced_c4a = -1;      // the layer whose inputs a tail-only one launch gets
};
SharingPlan sharing_plan(const StepCase& c);

// Builds (requests built, SPEC §8's "builder calls") and launches (build() and build_together()
// calls) of one step through a StepIndexer in `mode`; one_launch: build_cacheable_together
// first (given the first unsourced C4A layer's inputs in tail-only mode); cached = false: the
// cache disabled (no one launch then).
//   seed:  groups                         split: groups + 1 (the SWA segment)
//   tail:  groups, + 1 with one launch (the window columns of the first C4A shape's buffer)
//   one launch: the SWA-only, C128A and segment (or window-columns) builds in one call
//   uncached: one per layer (split: two, segment and compressed part)
struct ExpectedCalls {
  int64_t builds = 0;
  int64_t launches = 0;
};
ExpectedCalls expected_calls(const SharingPlan& plan, opt::SharingMode mode, bool one_launch, bool cached);

// The content errors such a step counts: each build's, where a build of the SWA segment (or of
// a tail buffer's window columns) counts `window_errors` and a compressed or tail build of
// layer l counts layer_errors[l] - window_errors. layer_errors: the reference's per layer.
int64_t expected_content_errors(const SharingPlan& plan, opt::SharingMode mode, bool one_launch, bool cached,
                                const std::vector<int64_t>& layer_errors, int64_t window_errors);

// The content errors of the step's SWA segment (the reference's build of its window inputs):
// what every layer's output counts in its window columns. 0 for a schedule without layers.
int64_t window_content_errors(const StepCase& c);

}  // namespace dsv4::harness
