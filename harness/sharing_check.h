// The differential check of one step in a SPEC §8 sharing mode: every layer's output through a
// StepIndexer in that mode equals the reference's SPEC §3 output in the mode's form (split: cut
// at column W; tail-only: the same matrix), and the builder calls, launches, content errors,
// buffer identity of shared builds and the lifetimes (a tail-only output used after the next
// C4A build of its shape, any output after end_step) are the ones SPEC §8 gives, as
// sharing_plan.h works them out from the case alone.
#pragma once
#include <functional>
#include <vector>

#include "harness/backend_step.h"
#include "harness/counting_builder.h"
#include "harness/mismatch.h"
#include "harness/sharing_plan.h"

namespace dsv4::harness {

struct SharingPathTotals {
  int64_t builds = 0;
  int64_t launches = 0;
  int64_t content_errors = 0;
};

// One step through a StepIndexer in `mode` (one_launch: build_cacheable_together first) on
// `staged`, counted around `builder`. `want`: the reference's output of every layer (as the
// case stages it); window_errors: window_content_errors(c). Every mismatch goes to `record`
// (backend and path filled in, the path naming the mode).
SharingPathTotals check_sharing_path(opt::SharingMode mode, bool one_launch, const StepCase& c,
                                     const std::vector<ref::BuilderOutput>& want, int64_t window_errors,
                                     const BackendStep& staged, CountingBuilder& builder,
                                     const std::function<void(Mismatch)>& record);

}  // namespace dsv4::harness
