// Whole DeepSeek-V4 steps on the CUDA backend through harness::make_step,
// make_c4a_indexer_outputs, BackendStep and StepIndexer: every layer equals the reference's
// uncached run (cached and uncached), cache hits return the first build's device buffers, call
// counts are Flash 23 / Pro 31, corrupted steps count the reference's errors, and steady-state
// steps reuse the workspace. Shapes: 8192 prefill tokens after 120K context; 256 decodes at 32K;
// 32 decodes + an 8K prefill; C128A at 1M context (E = 8192: 8320-column rows). The big shapes
// run the first layers of each schedule (every kind, and cache hits of each cacheable kind).
#include <gtest/gtest.h>

#include <memory>

#include "harness/step_factory.h"
#include "optimized/cuda_builder.h"
#include "tests/optimized/optimized_test_support.h"

namespace dsv4::opt {
namespace {

class CudaStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
    builder_ = make_cuda_builder();
  }

  // Cached (with identity) and uncached runs of one step, both equal to the reference.
  void expect_step(const harness::StepShape& shape, const ref::ModelSchedule& schedule,
                   uint64_t c4a_seed) {
    const ref::Step step = harness::make_step(shape);
    const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, c4a_seed);
    testing::StepRun cached;
    EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule, c4a, CacheOptions{}, &cached));
    EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule, c4a, CacheOptions{false, false}));
  }

  std::unique_ptr<MixedSparseIndicesBuilder> builder_;
};

constexpr int32_t kFirstLayers = 6;  // Flash: SWA, SWA, C4A, C128A, C4A, C128A; Pro: C128A x2, ...

harness::StepShape prefill_8k_after_120k() {
  harness::StepShape shape;
  shape.num_prefills = 1;
  shape.prefill_tokens_each = 8192;
  shape.prefill_context = 120 * 1024;
  shape.seed = 81;
  return shape;
}

harness::StepShape decodes_256_at_32k() {
  harness::StepShape shape;
  shape.num_decodes = 256;
  shape.decode_context = 32 * 1024;
  shape.seed = 82;
  return shape;
}

harness::StepShape decodes_32_plus_prefill_8k() {
  harness::StepShape shape;
  shape.num_decodes = 32;
  shape.decode_context = 16 * 1024;
  shape.num_prefills = 1;
  shape.prefill_tokens_each = 8192;
  shape.prefill_context = 4096;
  shape.seed = 83;
  return shape;
}

TEST_F(CudaStepTest, Prefill8KAfter120KContextFlash) {
  expect_step(prefill_8k_after_120k(), testing::first_layers(ref::deepseek_v4_flash(), kFirstLayers), 1);
}

TEST_F(CudaStepTest, Prefill8KAfter120KContextPro) {
  expect_step(prefill_8k_after_120k(), testing::first_layers(ref::deepseek_v4_pro(), kFirstLayers), 2);
}

// Small decode step: a CTA per row (local-form decode picks summed over the CTA).
TEST_F(CudaStepTest, Decodes256At32KFullSchedulesWithCallCounts) {
  const ref::Step step = harness::make_step(decodes_256_at_32k());
  for (const auto& [schedule, calls] : {std::pair{ref::deepseek_v4_flash(), 23}, std::pair{ref::deepseek_v4_pro(), 31}}) {
    const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 3);
    testing::StepRun cached, uncached;
    EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule, c4a, CacheOptions{}, &cached));
    EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule, c4a, CacheOptions{false, false},
                                                &uncached));
    EXPECT_EQ(cached.builder_calls, calls) << schedule.name;
    EXPECT_EQ(uncached.builder_calls, schedule.num_layers()) << schedule.name;
  }
}

// Programmatic dependent launch: every build of a step may begin while the one before it
// finishes; each waits for its predecessor before reading, so every layer still equals the
// reference (whole decode steps, and the first layers of a mixed step).
TEST_F(CudaStepTest, ProgrammaticLaunchStepsMatchTheReference) {
  CudaBuilderOptions options;
  options.programmatic_launch = true;
  builder_ = make_cuda_builder(nullptr, options);
  const ref::Step step = harness::make_step(decodes_256_at_32k());
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 6);
    EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule, c4a, CacheOptions{}));
    EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule, c4a, CacheOptions{false, false}));
  }
  expect_step(decodes_32_plus_prefill_8k(), testing::first_layers(ref::deepseek_v4_flash(), kFirstLayers), 7);
}

// Mixed step: a warp per row (local-form decode picks summed over the warp).
TEST_F(CudaStepTest, Decodes32PlusPrefill8KFlashAndPro) {
  expect_step(decodes_32_plus_prefill_8k(), testing::first_layers(ref::deepseek_v4_flash(), kFirstLayers), 4);
  expect_step(decodes_32_plus_prefill_8k(), testing::first_layers(ref::deepseek_v4_pro(), kFirstLayers), 5);
}

// C128A effective width E = 8192 at 1M context: 128 + 8192 columns, a CTA per row.
TEST_F(CudaStepTest, C128AAtOneMillionContext) {
  harness::StepShape shape;
  shape.num_decodes = 4;
  shape.decode_context = (1 << 20) - 8;
  shape.num_prefills = 1;
  shape.prefill_tokens_each = 300;
  shape.prefill_context = (1 << 20) - 300;
  shape.seed = 84;
  const ref::Step step = harness::make_step(shape);
  ASSERT_EQ(ref::c128a_metadata(step).effective_width, 8192);
  expect_step(shape, testing::first_layers(ref::deepseek_v4_pro(), 4), 6);
}

// Speculative decoding (2 tokens per decode request) and Flash's SWA-only layers.
TEST_F(CudaStepTest, SpeculativeDecodesAndShortPrefills) {
  harness::StepShape shape;
  shape.num_decodes = 40;
  shape.decode_tokens_each = 2;
  shape.decode_context = 3000;
  shape.num_prefills = 3;
  shape.prefill_tokens_each = 100;
  shape.prefill_context = 50;
  shape.seed = 85;
  expect_step(shape, ref::deepseek_v4_flash(), 7);
}

TEST_F(CudaStepTest, CorruptedStepCountsContentErrorsLikeTheReference) {
  harness::StepShape shape;
  shape.num_decodes = 8;
  shape.decode_context = 5000;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 64;
  shape.prefill_context = 2000;
  shape.seed = 86;
  ref::Step step = harness::make_step(shape);
  const ref::ModelSchedule schedule = testing::first_layers(ref::deepseek_v4_flash(), kFirstLayers);
  auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 8);
  step.c4a.block_table(0, 0) = -1;     // negative C4A entry (decode request 0)
  step.c4a.block_table(9, 3) = -2;     // negative C4A entry (prefill request 9)
  step.c128a.block_table(8, 1) = -1;   // negative C128A entry (prefill request 8)
  step.swa.block_table(9, 32) = -1;    // negative SWA entry inside request 9's windows
  for (auto& layer : c4a) {
    if (layer.prefill_topk.rows() > 3) {
      layer.prefill_topk(3, 0) = 1 << 24;   // local index past the table's width
      layer.prefill_topk(2, 1) = -9;        // no entry
    }
    if (layer.decode_local.rows() > 1) layer.decode_local(1, 2) = 1 << 22;  // past the width
  }
  int64_t reference_total = 0;
  for (const auto& out : ref::run_step_uncached(step, schedule, c4a)) reference_total += out.content_errors;
  ASSERT_GT(reference_total, 0);
  for (CacheOptions options : {CacheOptions{}, CacheOptions{false, false}, CacheOptions{true, true}}) {
    EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule, c4a, options));
  }
}

TEST_F(CudaStepTest, VerifyOnHitPassesOnTheDevice) {
  const ref::Step step = harness::make_step(decodes_32_plus_prefill_8k());
  const ref::ModelSchedule schedule = testing::first_layers(ref::deepseek_v4_pro(), 4);
  EXPECT_TRUE(testing::step_matches_reference(*builder_, step, schedule,
                                              harness::make_c4a_indexer_outputs(step, schedule, 9),
                                              CacheOptions{true, true}));
}

TEST_F(CudaStepTest, SteadyStateStepsReuseTheWorkspace) {
  const ref::Step step = harness::make_step(decodes_256_at_32k());
  const ref::ModelSchedule schedule = ref::deepseek_v4_pro();
  EXPECT_TRUE(testing::steady_state_reuses_workspace(*builder_, step, schedule,
                                                     harness::make_c4a_indexer_outputs(step, schedule, 10)));
}

}  // namespace
}  // namespace dsv4::opt
