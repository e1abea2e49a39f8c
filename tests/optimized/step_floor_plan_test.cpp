// bench/step_floor_plan: each mode's byte-floor plan makes exactly the builds SPEC §5/§8 give the
// mode (harness/sharing_plan.h, as step_bench checks its steps), writes where the mode's builds
// write (a region per output; a tail-only step's C4A builds one combined buffer), reads each
// C4A layer's own indexer output, and hands StreamingSequence every byte it counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "bench/bench_cases.h"
#include "bench/step_floor_plan.h"
#include "bench/step_variant.h"

namespace dsv4::bench {
namespace {

using opt::SharingMode;

const StepVariant kVariants[] = {{false},
                                 {true, SharingMode::kSeed},
                                 {true, SharingMode::kSeed, true},
                                 {true, SharingMode::kSplit},
                                 {true, SharingMode::kSplit, true},
                                 {true, SharingMode::kTailOnly},
                                 {true, SharingMode::kTailOnly, true}};

bool is_c4a(const ref::ModelSchedule& s, int32_t layer) {
  return ref::layer_kind_from_ratio(s.compress_ratios[static_cast<size_t>(layer)]) == ref::LayerKind::kC4A;
}

class StepFloorPlanTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StepFloorPlanTest, EachModeMakesItsBuildsWhereItsBuildsReadAndWrite) {
  for (const std::string model : {"flash", "pro"}) {
    const ref::ModelSchedule schedule = model_schedule(model);
    const StepFloorPlans plans = step_floor_plans(bench_case(GetParam()).shape, schedule);
    int32_t c4a_layers = 0;
    std::set<int> c4a_inputs;
    for (int32_t l = 0; l < schedule.num_layers(); ++l) {
      if (!is_c4a(schedule, l)) continue;
      ++c4a_layers;
      c4a_inputs.insert(l);  // layer l's indexer output: region l
    }
    for (const StepVariant& v : kVariants) {
      const std::string at = model + " " + GetParam() + " " + v.mode_name();
      const FloorPlan& plan = plans.of(v);
      EXPECT_EQ(static_cast<int64_t>(plan.size()), expected_step_calls(schedule, v).builds) << at;
      std::map<int, int> writers;  // output region -> builds writing it
      int c4a_reads = 0;
      for (const FloorBuild& b : plan) {
        ++writers[b.output];
        if (c4a_inputs.count(b.input) > 0) ++c4a_reads;
        EXPECT_GT(b.bytes.outputs, 0) << at;
      }
      EXPECT_EQ(c4a_reads, c4a_layers) << at << ": every C4A layer reads its own indexer output once";
      const bool tail = v.cached && v.mode == SharingMode::kTailOnly;
      for (const auto& [region, builds] : writers) {
        if (!tail) {
          EXPECT_EQ(builds, 1) << at << ": output region " << region;
        }
      }
      if (tail) {  // the C4A builds (and the one-launch window build) share one buffer
        const int combined_writers = c4a_layers + (v.one_launch ? 1 : 0);
        int most = 0;
        for (const auto& [region, builds] : writers) most = std::max(most, builds);
        EXPECT_EQ(most, combined_writers) << at;
        EXPECT_EQ(writers.size(), plan.size() - combined_writers + 1) << at;
      }
      // StreamingSequence moves every byte the floor counts, in rows as wide as the build's
      // (every build writes all T rows of the step, whole or a part of each).
      int64_t streamed = 0;
      const harness::StepShape& shape = bench_case(GetParam()).shape;
      const int64_t rows = int64_t{shape.num_decodes} * shape.decode_tokens_each +
                           int64_t{shape.num_prefills} * shape.prefill_tokens_each;
      const std::vector<StreamedBuild> streamed_plan = streamed_builds(plan);
      for (size_t i = 0; i < plan.size(); ++i) {
        const StreamedBuild& s = streamed_plan[i];
        streamed += s.own_read_bytes + s.shared_read_bytes + s.write_bytes;
        EXPECT_EQ(plan[i].rows, rows) << at;
        // The translated floor's words: the build's translated inputs, all among its own.
        EXPECT_EQ(s.translated_read_bytes, plan[i].bytes.translated_inputs) << at << ": build " << i;
        EXPECT_LE(s.translated_read_bytes, s.own_read_bytes) << at << ": build " << i;
        const int64_t output_words = (s.write_bytes + 15) / 16;
        EXPECT_EQ(s.row_words, std::max<int64_t>(1, output_words / rows))  // at least a word (lengths only: less)
            << at << ": build " << i << ", " << output_words << " words in all";
      }
      EXPECT_EQ(streamed, plan_bytes(plan)) << at;
    }
    // Sharing never adds bytes: split and tail-only move fewer than the seed, which moves
    // fewer than the uncached step.
    EXPECT_LT(plan_bytes(plans.split), plan_bytes(plans.seed)) << model;
    EXPECT_LT(plan_bytes(plans.tail), plan_bytes(plans.seed)) << model;
    EXPECT_LT(plan_bytes(plans.seed), plan_bytes(plans.uncached)) << model;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, StepFloorPlanTest, ::testing::Values("prefill1K", "decode64_ctx8K"));

}  // namespace
}  // namespace dsv4::bench
