// The builds each SPEC §8 mode makes in one benchmark step, as the byte floor counts them: in
// layer order, each with its part's bytes (bench/build_bytes.h) and the regions it reads and
// writes. A C4A layer reads its own indexer output, a cacheable kind's build (and the split SWA
// segment) inputs of its own; every build writes an output of its own, except that a
// tail-only step's C4A builds (and the one-launch window build) all write its one combined
// buffer. The byte floor is a plan's total; step_bench's cuda/step_floor/... streams the plan
// (StreamingSequence, bench/streaming_floors.h).
#pragma once
#include <cstdint>
#include <vector>

#include "bench/build_bytes.h"
#include "bench/streaming_floors.h"
#include "bench/step_variant.h"
#include "harness/step_factory.h"
#include "reference/model_schedule.h"

namespace dsv4::bench {

struct FloorBuild {
  BuildBytes bytes;
  int input = 0, output = 0;  // region ids
  int32_t rows = 0;           // the output rows it writes: every token of the step (whole or a part of each)
};
using FloorPlan = std::vector<FloorBuild>;

int64_t plan_bytes(const FloorPlan& plan);

struct StepFloorPlans {
  FloorPlan uncached, seed, split, tail, tail_one_launch;
  // The plan of a step driven as v (one launch changes the builds of tail-only steps only).
  const FloorPlan& of(const StepVariant& v) const;
};
// Every C4A layer of a benchmark step carries the same indexer output, so a kind's bytes are
// its first layer's.
StepFloorPlans step_floor_plans(const harness::StepShape& shape, const ref::ModelSchedule& schedule);

// The plan as StreamingSequence takes it: a build's decode inputs and top-k from its own input
// region, its metadata and block-table entries from the region every build shares (the
// step's, L2-resident after the first build), its outputs to its output region, in rows of
// its output words a row (the chained floors' rows).
std::vector<StreamedBuild> streamed_builds(const FloorPlan& plan);

}  // namespace dsv4::bench
