// Whole DeepSeek-V4 steps through the per-layer entry point (StepIndexer) on every backend,
// by the harness's differential check: every layer equals the reference's uncached run, cached
// and uncached (and with verify_on_hit), cache hits return the first build's buffers, builder
// calls are one per cacheable kind plus one per C4A layer (Flash 23, Pro 31), corrupted steps
// count the reference's errors. Shapes: small mixed steps; the benchmark cases (8192 prefill
// tokens after 120K context, 256 decodes at 32K, 32 decodes + an 8K prefill); C128A at 1M
// context (E = 8192: 8320-column rows). The big shapes run the first layers of each schedule
// (every kind, and cache hits of each cacheable kind).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

#include "bench/bench_cases.h"
#include "harness/backend_step.h"
#include "harness/step_factory.h"
#include "optimized/step_indexer.h"
#include "support/backend_test.h"
#include "support/expectations.h"
#include "support/step_shapes.h"

namespace dsv4::testing {
namespace {

using StepIndexerTest = BackendTest;
DSV4_ON_EVERY_BACKEND(StepIndexerTest);
// Steps of the sizes the GPU is for: the Release build and the H200 run them, the sanitizer
// job (Debug + ASan, 30-100 s each there) leaves them out.
using LargeStepTest = BackendTest;
DSV4_ON_EVERY_BACKEND(LargeStepTest);

// The first `layers` layers of a schedule (Flash: SWA, SWA, C4A, C128A, C4A, C128A; Pro:
// C128A x2, C4A, ...): every kind and the cache hits, at a fraction of the cost.
ref::ModelSchedule first_layers(ref::ModelSchedule schedule, int32_t layers) {
  schedule.compress_ratios.resize(static_cast<size_t>(std::min(layers, schedule.num_layers())));
  schedule.name += " (first " + std::to_string(schedule.num_layers()) + " layers)";
  return schedule;
}

harness::StepCase factory_case(const harness::StepShape& shape, const ref::ModelSchedule& schedule,
                               uint64_t c4a_seed) {
  harness::StepCase c;
  c.step = harness::make_step(shape);
  c.schedule = schedule;
  c.c4a_per_layer = harness::make_c4a_indexer_outputs(c.step, schedule, c4a_seed);
  return c;
}

// The check on this backend, without and with verify_on_hit.
void expect_agrees(const harness::DifferentialOptions& base, const harness::StepCase& c) {
  for (bool verify_on_hit : {false, true}) {
    harness::DifferentialOptions options = base;
    options.verify_on_hit = verify_on_hit;
    EXPECT_TRUE(agrees(harness::differential_check(c, options))) << (verify_on_hit ? "verify_on_hit" : "");
  }
}

TEST_P(StepIndexerTest, RealSchedulesBuildOncePerCacheableKindPlusOncePerC4aLayer) {
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    const harness::DifferentialSummary s = harness::differential_check(factory_case(small_mixed_shape(11), schedule, 12),
                                                                       on_this_backend());
    EXPECT_TRUE(agrees(s));
    EXPECT_EQ(s.backends.at(0).calls_cached, harness::expected_builder_calls(schedule, true)) << schedule.name;
    EXPECT_EQ(s.backends.at(0).calls_uncached, schedule.num_layers()) << schedule.name;
  }
}

TEST_P(StepIndexerTest, FactoryStepsMatchTheReference) {
  std::mt19937_64 rng(99);
  auto uniform = [&rng](int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); };
  for (int i = 0; i < 6; ++i) {
    harness::StepShape shape;
    shape.num_decodes = uniform(0, 4);
    shape.decode_tokens_each = uniform(1, 2);
    shape.decode_context = uniform(2, 3000);
    shape.num_prefills = uniform(0, 2);
    shape.prefill_tokens_each = uniform(0, 20);
    shape.prefill_context = uniform(0, 3000);
    shape.swa_block_size = i % 2 == 0 ? 64 : 16;
    shape.seed = 1000 + static_cast<uint64_t>(i);
    for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
      SCOPED_TRACE("step " + std::to_string(i) + ", " + schedule.name);
      expect_agrees(on_this_backend(), factory_case(shape, schedule, 2000 + static_cast<uint64_t>(i)));
    }
  }
}

// The benchmark cases (bench/bench_cases.cpp), the shapes kernel_bench and step_bench time.
TEST_P(LargeStepTest, BenchCasesMatchTheReference) {
  constexpr int32_t kFirstLayers = 6;
  uint64_t seed = 1;
  for (const char* name : {"prefill8K_ctx120K", "decode32_prefill8K", "decode256_ctx32K"}) {
    for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
      SCOPED_TRACE(std::string(name) + ", " + schedule.name);
      // A decode-only step is small: the full schedules (a CTA per row on the GPU).
      const bool small = std::string(name) == "decode256_ctx32K";
      const harness::StepCase c =
          factory_case(bench::bench_case(name).shape, small ? schedule : first_layers(schedule, kFirstLayers), seed++);
      if (std::string(name) == "decode32_prefill8K") {
        expect_agrees(on_this_backend(), c);  // verify_on_hit too
      } else {
        EXPECT_TRUE(agrees(harness::differential_check(c, on_this_backend())));
      }
    }
  }
}

// C128A effective width E = 8192 at 1M context: 128 + 8192 columns, a CTA per row.
TEST_P(LargeStepTest, C128AAtOneMillionContext) {
  harness::StepShape shape;
  shape.num_decodes = 4;
  shape.decode_context = (1 << 20) - 8;
  shape.num_prefills = 1;
  shape.prefill_tokens_each = 300;
  shape.prefill_context = (1 << 20) - 300;
  shape.seed = 84;
  const harness::StepCase c = factory_case(shape, first_layers(ref::deepseek_v4_pro(), 4), 6);
  ASSERT_EQ(ref::c128a_metadata(c.step).effective_width, 8192);
  expect_agrees(on_this_backend(), c);
}

// Speculative decoding (2 tokens per decode request) and Flash's SWA-only layers.
TEST_P(LargeStepTest, SpeculativeDecodesAndShortPrefills) {
  harness::StepShape shape;
  shape.num_decodes = 40;
  shape.decode_tokens_each = 2;
  shape.decode_context = 3000;
  shape.num_prefills = 3;
  shape.prefill_tokens_each = 100;
  shape.prefill_context = 50;
  shape.seed = 85;
  expect_agrees(on_this_backend(), factory_case(shape, ref::deepseek_v4_flash(), 7));
}

// Corrupted caches and indexer picks: equal -1s everywhere, error counts equal to the
// reference's (uncached: every layer; cached: the layers actually built).
TEST_P(StepIndexerTest, CorruptedStepsCountContentErrorsLikeTheReference) {
  harness::DifferentialOptions options = on_this_backend();
  options.content_errors = harness::ContentErrorPolicy::kMustMatch;

  harness::StepCase small = factory_case(small_mixed_shape(21), ref::deepseek_v4_flash(), 22);
  small.step.c4a.block_table(0, 0) = -1;    // decode request 0's first C4A block
  small.step.c128a.block_table(4, 1) = -3;  // prefill request 4's second C128A block
  small.step.swa.block_table(3, 10) = -1;   // an SWA block of prefill request 3's windows
  for (auto& layer : small.c4a_per_layer) {
    if (layer.prefill_topk.size() > 0) layer.prefill_topk(0, 0) = 1 << 20;  // past the width
    if (layer.decode_local.size() > 0) layer.decode_local(1, 0) = -7;       // no entry
  }

  harness::StepShape shape;
  shape.num_decodes = 8;
  shape.decode_context = 5000;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 64;
  shape.prefill_context = 2000;
  shape.seed = 86;
  harness::StepCase larger = factory_case(shape, first_layers(ref::deepseek_v4_flash(), 6), 8);
  larger.step.c4a.block_table(0, 0) = -1;    // decode request 0
  larger.step.c4a.block_table(9, 3) = -2;    // prefill request 9
  larger.step.c128a.block_table(8, 1) = -1;  // prefill request 8
  larger.step.swa.block_table(9, 32) = -1;   // inside request 9's windows
  for (auto& layer : larger.c4a_per_layer) {
    if (layer.prefill_topk.rows() > 3) {
      layer.prefill_topk(3, 0) = 1 << 24;  // past the table's width
      layer.prefill_topk(2, 1) = -9;       // no entry
    }
    if (layer.decode_local.rows() > 1) layer.decode_local(1, 2) = 1 << 22;  // past the width
  }

  for (const harness::StepCase* c : {&small, &larger}) {
    const harness::DifferentialSummary s = harness::differential_check(*c, options);
    EXPECT_GT(s.reference_content_errors, 0);
    EXPECT_EQ(s.backends.at(0).content_errors, s.reference_content_errors);
    expect_agrees(options, *c);
  }
}

// Two consecutive steps of the same shape get the same output memory for every layer: the
// workspace replays its chunks, so steady-state steps allocate nothing.
TEST_P(LargeStepTest, SteadyStateStepsReuseTheWorkspace) {
  const ref::ModelSchedule schedule = ref::deepseek_v4_pro();
  const harness::StepCase c = factory_case(bench::bench_case("decode256_ctx32K").shape, schedule, 10);
  const harness::BackendStep staged(backend(), c.step, schedule, c.c4a_per_layer);
  std::vector<const int32_t*> first;
  for (int s = 0; s < 3; ++s) {
    opt::StepIndexer indexer(builder(), staged.inputs());
    for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
      const opt::BuiltIndices built =
          indexer.layer_indices(schedule.compress_ratios[static_cast<size_t>(layer)], staged.c4a(layer));
      if (s == 0) first.push_back(built.sparse_indices);
      EXPECT_EQ(built.sparse_indices, first[static_cast<size_t>(layer)]) << "step " << s << " layer " << layer;
    }
    EXPECT_EQ(indexer.content_errors(), 0);
    indexer.end_step();
  }
}

TEST_P(StepIndexerTest, RefusesUseAfterEndOfStep) {
  const harness::StepCase c = factory_case(small_mixed_shape(5), ref::deepseek_v4_flash(), 6);
  const harness::BackendStep staged(backend(), c.step, c.schedule, c.c4a_per_layer);
  opt::StepIndexer indexer(builder(), staged.inputs());
  indexer.layer_indices(0);
  indexer.end_step();
  EXPECT_THROW(indexer.layer_indices(0), std::logic_error);
  EXPECT_THROW(indexer.layer_indices(128), std::logic_error);
  EXPECT_THROW(indexer.layer_indices(4, staged.c4a(2)), std::logic_error);
}

}  // namespace
}  // namespace dsv4::testing
