// bench/step_floor_plan.h: each mode's builds of a benchmark step, for the byte floors.
#include "bench/step_floor_plan.h"

#include "bench/bench_cases.h"
#include "reference/sharing_modes.h"

namespace dsv4::bench {

int64_t plan_bytes(const FloorPlan& plan) {
  int64_t total = 0;
  for (const FloorBuild& b : plan) total += b.bytes.total();
  return total;
}

const FloorPlan& StepFloorPlans::of(const StepVariant& v) const {
  if (!v.cached) return uncached;
  switch (v.mode) {
    case opt::SharingMode::kSeed: return seed;
    case opt::SharingMode::kSplit: return split;
    case opt::SharingMode::kTailOnly: return v.one_launch ? tail_one_launch : tail;
  }
  return seed;
}

StepFloorPlans step_floor_plans(const harness::StepShape& shape, const ref::ModelSchedule& schedule) {
  const HostStep host = make_host_step(shape, schedule);
  const int32_t layers = schedule.num_layers();
  const auto kind_of = [&](int32_t l) {
    return static_cast<int>(ref::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(l)]));
  };
  BuildBytes whole[3], compressed[3], window;
  bool seen[3] = {false, false, false};
  for (int32_t l = 0; l < layers; ++l) {
    const int k = kind_of(l);
    if (seen[k]) continue;
    seen[k] = true;
    const ref::BuilderInputs in = bench_layer_inputs(host.step, schedule, host.c4a_per_layer, l);
    whole[k] = build_bytes(in);
    compressed[k] = build_bytes(in, BuildColumns::kCompressed);
    window = build_bytes(ref::window_segment_inputs(in), BuildColumns::kWindow);
  }
  const int c4a = static_cast<int>(ref::LayerKind::kC4A);
  // Input regions: layer l's own indexer output (C4A), layers + kind (the others), layers + 3
  // (the SWA segment). Output regions: a new one per build, or `combined` (tail-only C4A).
  const int segment_input = layers + 3;
  int outputs = 0;
  const int combined = outputs++;
  StepFloorPlans f;
  bool built[3] = {false, false, false};
  bool window_built = false;
  for (int32_t l = 0; l < layers; ++l) {
    const int k = kind_of(l);
    const int input = k == c4a ? l : layers + k;
    f.uncached.push_back({whole[k], input, outputs++});
    if (k == c4a) {
      f.seed.push_back({whole[k], input, outputs++});
      f.split.push_back({compressed[k], input, outputs++});
      f.tail.push_back({built[k] ? compressed[k] : whole[k], input, combined});
      if (!window_built) f.tail_one_launch.push_back({window, segment_input, combined});
      window_built = true;
      f.tail_one_launch.push_back({compressed[k], input, combined});
    } else if (!built[k]) {
      f.seed.push_back({whole[k], input, outputs++});
      f.split.push_back({compressed[k], input, outputs++});
      f.tail.push_back({whole[k], input, outputs++});
      f.tail_one_launch.push_back({whole[k], input, outputs++});
    }
    built[k] = true;
  }
  if (layers > 0) f.split.insert(f.split.begin(), FloorBuild{window, segment_input, outputs++});  // the one SWA segment
  for (FloorPlan* plan : {&f.uncached, &f.seed, &f.split, &f.tail, &f.tail_one_launch}) {
    for (FloorBuild& b : *plan) b.rows = host.step.num_tokens();
  }
  return f;
}

std::vector<StreamedBuild> streamed_builds(const FloorPlan& plan) {
  std::vector<StreamedBuild> builds;
  for (const FloorBuild& b : plan) {
    StreamedBuild s;
    s.own_read_bytes = b.bytes.decode_inputs + b.bytes.prefill_topk;
    s.translated_read_bytes = b.bytes.translated_inputs;
    s.shared_read_bytes = b.bytes.metadata + b.bytes.block_tables;
    s.write_bytes = b.bytes.outputs;
    s.input = b.input;
    s.output = b.output;
    s.row_words = row_words_of(s.write_bytes, b.rows);
    builds.push_back(s);
  }
  return builds;
}

}  // namespace dsv4::bench
