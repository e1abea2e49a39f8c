// The shipped captures (tests/data/capture_*, written by harness/python/write_capture.py with
// numpy) load and replay through the reference with no content errors; C++-saved captures of
// factory steps replay to the same reference output as the step itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/capture.h"
#include "harness/step_factory.h"
#include "support/scratch_dir.h"

namespace dsv4::harness {
namespace {

using dsv4::testing::ScratchDir;
namespace fs = std::filesystem;

std::string data_dir(const std::string& name) { return std::string(DSV4_TEST_DATA_DIR) + "/" + name; }

int64_t total_content_errors(const std::vector<ref::BuilderOutput>& outputs) {
  int64_t errors = 0;
  for (const ref::BuilderOutput& out : outputs) errors += out.content_errors;
  return errors;
}

TEST(CaptureReplayTest, FlashMixedLoadsAndReplaysCleanly) {
  const Capture c = load_capture(data_dir("capture_flash_mixed"));
  EXPECT_EQ(c.schedule.compress_ratios, ref::deepseek_v4_flash().compress_ratios);
  EXPECT_EQ(c.schedule.c4a_topk, 512);
  ASSERT_EQ(c.step.num_requests(), 3);
  ASSERT_EQ(c.step.num_tokens(), 24);
  ASSERT_EQ(c.step.num_decode_tokens, 4);
  EXPECT_EQ(c.step.decode_valid, (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(c.c4a_per_layer[2].decode_local.rows(), 4);
  EXPECT_EQ(c.c4a_per_layer[2].prefill_topk.rows(), 20);
  EXPECT_EQ(c.c4a_per_layer[3].decode_local.size(), 0);  // C128A layer: no indexer output

  const std::vector<ref::BuilderOutput> outputs = ref::run_step_uncached(c.step, c.schedule, c.c4a_per_layer);
  ASSERT_EQ(outputs.size(), 43u);
  EXPECT_EQ(total_content_errors(outputs), 0);
  // The padding token (3) has no SWA entries and no compressed length in any layer.
  for (const ref::BuilderOutput& out : outputs) {
    EXPECT_EQ(out.sparse_lens(3), c.schedule.window);
    EXPECT_TRUE((out.sparse_indices.row(3).array() == -1).all());
  }
  // A C4A layer: the last prefill token (position 219) sees min(512, 220 / 4) = 55 picks.
  EXPECT_EQ(outputs[2].sparse_lens(23), 128 + 55);
}

TEST(CaptureReplayTest, FlashDecodeOnlyReplaysCleanly) {
  const Capture c = load_capture(data_dir("capture_flash_decode"));
  ASSERT_EQ(c.step.num_tokens(), c.step.num_decode_tokens);
  EXPECT_EQ(c.c4a_per_layer[2].prefill_topk.rows(), 0);
  EXPECT_EQ(c.c4a_per_layer[2].prefill_topk.cols(), 76);
  const std::vector<ref::BuilderOutput> outputs = ref::run_step_uncached(c.step, c.schedule, c.c4a_per_layer);
  ASSERT_EQ(outputs.size(), 43u);
  EXPECT_EQ(total_content_errors(outputs), 0);
}

TEST(CaptureReplayTest, ProPrefillReplaysCleanly) {
  const Capture c = load_capture(data_dir("capture_pro_prefill"));
  EXPECT_EQ(c.schedule.compress_ratios, ref::deepseek_v4_pro().compress_ratios);
  EXPECT_EQ(c.step.num_decode_tokens, 0);
  EXPECT_TRUE(c.step.decode_valid.empty());
  const std::vector<ref::BuilderOutput> outputs = ref::run_step_uncached(c.step, c.schedule, c.c4a_per_layer);
  ASSERT_EQ(outputs.size(), 61u);
  EXPECT_EQ(total_content_errors(outputs), 0);
}

void expect_same_outputs(const std::vector<ref::BuilderOutput>& a, const std::vector<ref::BuilderOutput>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t l = 0; l < a.size(); ++l) {
    ASSERT_EQ(a[l].sparse_indices.rows(), b[l].sparse_indices.rows()) << "layer " << l;
    ASSERT_EQ(a[l].sparse_indices.cols(), b[l].sparse_indices.cols()) << "layer " << l;
    EXPECT_TRUE(a[l].sparse_indices == b[l].sparse_indices) << "layer " << l;
    EXPECT_TRUE(a[l].sparse_lens == b[l].sparse_lens) << "layer " << l;
    EXPECT_EQ(a[l].content_errors, b[l].content_errors) << "layer " << l;
  }
}

// Factory steps of both schedules: save, load, replay; the outputs equal the original's.
TEST(CaptureReplayTest, SavedFactoryStepsReplayToTheSameOutput) {
  struct Case {
    ref::ModelSchedule schedule;
    StepShape shape;
  };
  StepShape mixed;
  mixed.num_decodes = 3;
  mixed.decode_tokens_each = 2;
  mixed.decode_context = 300;
  mixed.num_prefills = 1;
  mixed.prefill_tokens_each = 17;
  mixed.prefill_context = 140;
  mixed.seed = 7;
  StepShape prefill;
  prefill.num_prefills = 2;
  prefill.prefill_tokens_each = 9;
  prefill.prefill_context = 260;
  prefill.seed = 11;
  StepShape empty;
  for (const Case& c : {Case{ref::deepseek_v4_flash(), mixed}, Case{ref::deepseek_v4_pro(), prefill},
                        Case{ref::deepseek_v4_flash(), empty}}) {
    SCOPED_TRACE(c.schedule.name);
    Capture original;
    original.step = make_step(c.shape);
    original.schedule = c.schedule;
    original.c4a_per_layer = make_c4a_indexer_outputs(original.step, c.schedule, c.shape.seed);
    ScratchDir dir;
    save_capture(original, dir.str());
    const Capture loaded = load_capture(dir.str());
    const auto expected = ref::run_step_uncached(original.step, original.schedule, original.c4a_per_layer);
    EXPECT_EQ(total_content_errors(expected), 0);
    expect_same_outputs(expected, ref::run_step_uncached(loaded.step, loaded.schedule, loaded.c4a_per_layer));
  }
}

}  // namespace
}  // namespace dsv4::harness
