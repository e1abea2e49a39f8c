// The step ttft_report times in each SPEC §8 mode (bench/ttft_sim.h run_measured_step) makes
// the builds SPEC §5/§8 give that mode, row part by row part, counted by CountingBuilder: a
// mode that silently fell back to the seed's builds fails here, also where its call count
// equals the seed's (tail-only: 23 = 23 on Flash, but tails instead of whole rows).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "bench/bench_cases.h"
#include "bench/step_variant.h"
#include "bench/ttft_sim.h"
#include "harness/counting_builder.h"
#include "support/backend_test.h"

namespace dsv4::bench {
namespace {

using opt::RowPart;
using opt::SharingMode;

// Builds of each row part and launches of one step, worked out by hand from the schedules:
// Flash = 2 SWA-only, then 21 C4A and 20 C128A; Pro = 31 C128A and 30 C4A.
struct PartBuilds {
  int64_t whole = 0, window = 0, compressed = 0, tail = 0, launches = 0;
  int64_t builds() const { return whole + window + compressed + tail; }
};
struct Want {
  StepVariant variant;
  PartBuilds flash, pro;
};
const Want kWants[] = {
    {{false}, {43, 0, 0, 0, 43}, {61, 0, 0, 0, 61}},
    // One build per cacheable kind, one per C4A layer.
    {{true, SharingMode::kSeed}, {23, 0, 0, 0, 23}, {31, 0, 0, 0, 31}},
    // SWA-only and C128A in one launch (Pro has no SWA-only layer: nothing to join).
    {{true, SharingMode::kSeed, true}, {23, 0, 0, 0, 22}, {31, 0, 0, 0, 31}},
    // The SWA segment once, then each build's compressed columns.
    {{true, SharingMode::kSplit}, {0, 1, 23, 0, 24}, {0, 1, 31, 0, 32}},
    {{true, SharingMode::kSplit, true}, {0, 1, 23, 0, 22}, {0, 1, 31, 0, 31}},
    // The first C4A layer builds its buffer whole, every later one only its tail.
    {{true, SharingMode::kTailOnly}, {3, 0, 0, 20, 23}, {2, 0, 0, 29, 31}},
    // The buffer's window columns in the one launch, then every C4A layer a tail.
    {{true, SharingMode::kTailOnly, true}, {2, 1, 0, 21, 22}, {1, 1, 0, 30, 31}},
};

class TtftModesTest : public dsv4::testing::BackendTest {};

TEST_P(TtftModesTest, EachModesMeasuredStepMakesItsOwnBuilds) {
  harness::StepShape shape;  // what ttft_report stages: a prefill chunk beside decodes
  shape.num_decodes = 3;
  shape.decode_context = 1000;
  shape.num_prefills = 1;
  shape.prefill_context = 512;
  shape.prefill_tokens_each = 64;
  shape.seed = 5;
  const RestOfLayer no_rest(backend(), nullptr, {});
  for (const std::string& model : model_names()) {
    const std::unique_ptr<StagedStep> s = stage_step(backend(), shape, model_schedule(model), false);
    for (const Want& want : kWants) {
      SCOPED_TRACE(model + ", " + want.variant.mode_name());
      const PartBuilds& w = model == "flash" ? want.flash : want.pro;
      harness::CountingBuilder counting(builder());
      const StepRun run = run_measured_step(counting, *s, want.variant, RestSetting{}, no_rest, nullptr, nullptr);
      EXPECT_EQ(counting.builds_of(RowPart::kWhole), w.whole);
      EXPECT_EQ(counting.builds_of(RowPart::kWindow), w.window);
      EXPECT_EQ(counting.builds_of(RowPart::kCompressed), w.compressed);
      EXPECT_EQ(counting.builds_of(RowPart::kTail), w.tail);
      EXPECT_EQ(counting.launches(), w.launches);
      // The step's own counts (what the simulation checks on every run) agree.
      EXPECT_EQ(run.counts.builder_calls, w.builds());
      EXPECT_EQ(run.counts.launches, w.launches);
      EXPECT_EQ(run.counts.content_errors, 0);
      const harness::ExpectedCalls expected = expected_step_calls(s->schedule, want.variant);
      EXPECT_EQ(expected.builds, w.builds());
      EXPECT_EQ(expected.launches, w.launches);
    }
  }
}

DSV4_ON_EVERY_BACKEND(TtftModesTest);

TEST(TtftModes, ModeNamesRoundTripAndUnknownNamesAreRejected) {
  for (const Want& want : kWants) {
    if (!want.variant.cached) continue;
    const StepVariant v = cached_variant_from_name(want.variant.mode_name());
    EXPECT_EQ(v.mode, want.variant.mode);
    EXPECT_EQ(v.one_launch, want.variant.one_launch);
    EXPECT_TRUE(v.cached);
  }
  EXPECT_EQ((StepVariant{true, SharingMode::kTailOnly, true}.mode_name()), "tail_one_launch");
  EXPECT_EQ(StepVariant{false}.mode_name(), "uncached");
  for (const char* bad : {"uncached", "cached", "tail-only", "", "seed,split"}) {
    try {
      cached_variant_from_name(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("unknown mode '" + std::string(bad) + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("split_one_launch"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dsv4::bench
