// How a benchmark drives one whole step (step_bench, ttft_report): uncached, or through the
// per-step cache in a SPEC §8 sharing mode, optionally with the cacheable kinds built in one
// launch first; and the builds and launches SPEC §5/§8 allow such a step.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "bench/bench_cases.h"
#include "harness/sharing_plan.h"
#include "optimized/step_indexer.h"

namespace dsv4::bench {

struct StepVariant {
  bool cached = true;
  opt::SharingMode mode = opt::SharingMode::kSeed;
  bool one_launch = false;  // build_cacheable_together first (SPEC §8 one launch; cached only)
  // "uncached", or the cached mode: "seed", "split", "tail", each with "_one_launch" where set.
  std::string mode_name() const;
};
// The cached variant of a mode_name() ("seed", "split_one_launch", ...); std::invalid_argument
// naming the known names otherwise.
StepVariant cached_variant_from_name(const std::string& name);

// Every layer's indices through `indexer` (made in v's mode and caching), as an engine's
// forward pass asks for them; after_layer (if set) runs after each layer's call: what the
// rest of the layer does in ttft_report.
void index_every_layer(opt::StepIndexer& indexer, const StagedStep& s, const StepVariant& v,
                       const std::function<void()>& after_layer = nullptr);

// What a step counted (content errors: after a sync), read just before its end_step().
struct StepCounts {
  int64_t builder_calls = 0, launches = 0, content_errors = 0;
};
StepCounts finish_step(opt::StepIndexer& indexer);

// The builds and launches of one benchmark step of `schedule` in v (harness/sharing_plan.h,
// from the schedule alone: every C4A layer has the schedule's top-k and no index source).
harness::ExpectedCalls expected_step_calls(const ref::ModelSchedule& schedule, const StepVariant& v);

}  // namespace dsv4::bench
