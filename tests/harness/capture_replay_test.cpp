// The shipped captures (tests/data/capture_*, written by harness/python/write_capture.py with
// numpy) load and replay through the reference with no content errors; C++-saved captures of
// factory steps, and of generated steps in persistent buffers (SPEC §7), replay to the same
// reference output as the step itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/capture.h"
#include "harness/differential.h"
#include "harness/generators.h"
#include "harness/persistent_buffers.h"
#include "harness/step_factory.h"
#include "property_util.h"
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

// The shipped capture of an engine's persistent buffers (format version 2, written by
// harness/python/write_capture.py): the live step at their head, the capacities and addressing
// as written, and the same outputs through the reference as its live step.
TEST(CaptureReplayTest, FlashEngineLoadsItsPersistentBuffers) {
  const Capture c = load_capture(data_dir("capture_flash_engine"));
  ASSERT_EQ(c.step.num_tokens(), 6);
  ASSERT_EQ(c.step.num_requests(), 3);
  ASSERT_EQ(c.step.num_decode_tokens, 3);
  EXPECT_EQ(c.step.decode_valid, (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(c.step.swa.block_table.rows(), 8);  // a persistent table
  EXPECT_EQ(c.step.swa.block_span, 80);
  EXPECT_EQ(c.step.swa.base_offset, 4096);
  EXPECT_EQ(c.step.c4a.block_span, 96);
  EXPECT_EQ(c.step.c128a.base_offset, 2147482648);
  EXPECT_EQ(c.swa_table_row_stride, c.step.swa.block_table.cols() + 3);
  ASSERT_TRUE(c.persistent.has_value());
  const PersistentStep& p = *c.persistent;
  EXPECT_EQ(p.token_capacity(), 10);
  EXPECT_EQ(p.request_capacity(), 5);
  EXPECT_EQ(p.decode_capacity, 5);
  EXPECT_EQ(p.prefill_capacity, 6);
  EXPECT_EQ(p.c128a_capacity, 8192);
  EXPECT_EQ(p.output_row_padding, 8);
  EXPECT_TRUE((p.token_to_req.tail(4).array() == -1).all());  // sentinel request ids
  EXPECT_EQ(p.c4a_per_layer[2].decode_local.rows(), 5);
  EXPECT_EQ(c.c4a_per_layer[2].decode_local.rows(), 3);
  EXPECT_EQ(c.c4a_per_layer[2].prefill_topk.rows(), 3);
  EXPECT_EQ(total_content_errors(ref::run_step_uncached(c.step, c.schedule, c.c4a_per_layer)), 0);
}

// Generated steps in persistent buffers (spans, offsets, a strided table): saved and loaded,
// they replay through every path, the step graph included, with the original's outputs.
TEST(CaptureReplayTest, SavedEngineCasesReplayLikeTheOriginal) {
  const rc::Gen<StepCase> gen = gen_step_case(ScheduleChoice::kAny, testing::small_steps());
  int graph_steps = 0;
  for (uint64_t seed = 0; graph_steps < 12; ++seed) {
    StepCase c = draw(gen, 300 + seed, 70);
    // A capture's compressed block sizes are main_block_size / 4 and / 128 (SPEC §2).
    const int32_t main = c.step.c4a.block_size * 4;
    if (main % 128 != 0 || c.step.c128a.block_size != main / 128 || c.schedule.num_layers() == 0) continue;
    c.schedule.main_block_size = main;
    if (!c.persistent) make_persistent(c, draw(gen_step_capacity(), seed), seed);
    c.layout = StepLayout{};  // what a capture holds of a layout: the tables' row strides
    c.layout.c4a_table.row_padding = 2;
    ScratchDir dir;
    save_capture(to_capture(c), dir.str());
    const StepCase loaded = step_case(load_capture(dir.str()));
    EXPECT_EQ(loaded.layout.c4a_table.row_padding, 2);
    const DifferentialSummary s = differential_check(loaded, testing::host_only(), "seed " + std::to_string(seed));
    EXPECT_TRUE(s.ok()) << s.report();
    graph_steps += static_cast<int>(s.backends.at(0).graph_steps);
    expect_same_outputs(reference_outputs(c), reference_outputs(loaded));
    ASSERT_LT(seed, 200u) << "too few generated steps with a capture's block sizes";
  }
}

}  // namespace
}  // namespace dsv4::harness
