// Layer kinds, the DeepSeek-V4 schedules (SPEC §1, §5) and per-layer builder inputs (SPEC §6).
#include <gtest/gtest.h>

#include "reference/model_schedule.h"
#include "harness/hand_cases.h"
#include "support/assertions.h"

namespace dsv4::ref {
namespace {

using harness::mat;
using testing::same_matrix;
using testing::same_vector;
using testing::throws_naming;
using harness::vec;

TEST(LayerKind, FromRatio) {
  EXPECT_EQ(layer_kind_from_ratio(0), LayerKind::kSwaOnly);
  EXPECT_EQ(layer_kind_from_ratio(1), LayerKind::kSwaOnly);
  EXPECT_EQ(layer_kind_from_ratio(4), LayerKind::kC4A);
  EXPECT_EQ(layer_kind_from_ratio(128), LayerKind::kC128A);
  EXPECT_STREQ(layer_kind_name(LayerKind::kSwaOnly), "SWA-only");
  EXPECT_STREQ(layer_kind_name(LayerKind::kC4A), "C4A");
  EXPECT_STREQ(layer_kind_name(LayerKind::kC128A), "C128A");
}

TEST(LayerKind, UnknownRatioRejected) {
  for (int32_t ratio : {-1, 2, 3, 8, 64, 127, 129, 256}) {
    EXPECT_TRUE(throws_naming([&] { layer_kind_from_ratio(ratio); },
                              {"compress_ratio = " + std::to_string(ratio)}));
  }
}

TEST(ModelSchedule, FlashCountsAndOrder) {
  const ModelSchedule flash = deepseek_v4_flash();
  EXPECT_EQ(flash.num_layers(), 43);
  EXPECT_EQ(flash.count(LayerKind::kSwaOnly), 2);
  EXPECT_EQ(flash.count(LayerKind::kC4A), 21);
  EXPECT_EQ(flash.count(LayerKind::kC128A), 20);
  EXPECT_EQ(flash.window, 128);
  EXPECT_EQ(flash.c4a_topk, 512);
  EXPECT_EQ(flash.main_block_size, 256);
  // 2 SWA-only, then C4A / C128A alternating starting with C4A; the last main layer is C4A.
  EXPECT_EQ(layer_kind_from_ratio(flash.compress_ratios[0]), LayerKind::kSwaOnly);
  EXPECT_EQ(layer_kind_from_ratio(flash.compress_ratios[1]), LayerKind::kSwaOnly);
  for (int32_t layer = 2; layer < 43; ++layer) {
    EXPECT_EQ(flash.compress_ratios[layer], layer % 2 == 0 ? 4 : 128) << "layer " << layer;
  }
}

TEST(ModelSchedule, ProCountsAndOrder) {
  const ModelSchedule pro = deepseek_v4_pro();
  EXPECT_EQ(pro.num_layers(), 61);
  EXPECT_EQ(pro.count(LayerKind::kSwaOnly), 0);
  EXPECT_EQ(pro.count(LayerKind::kC4A), 30);
  EXPECT_EQ(pro.count(LayerKind::kC128A), 31);
  EXPECT_EQ(pro.window, 128);
  EXPECT_EQ(pro.c4a_topk, 1024);
  EXPECT_EQ(pro.main_block_size, 256);
  EXPECT_EQ(pro.compress_ratios[0], 128);
  EXPECT_EQ(pro.compress_ratios[1], 128);
  for (int32_t layer = 2; layer < 61; ++layer) {
    EXPECT_EQ(pro.compress_ratios[layer], layer % 2 == 0 ? 4 : 128) << "layer " << layer;
  }
}

// A step valid for every kind (W = 4): SWA block size 8, C4A block size 2, C128A block size 2.
//   request 0: decode token 0, seq_len 300 (pos 299)
//   request 1: decode padding token 1, seq_len 5 (pos 4)
//   request 2: prefill tokens 2, 3, seq_len 260 (pos 258, 259)
Step mixed_step() {
  Step step;
  step.query_start_loc = vec({0, 1, 2, 4});
  step.seq_lens = vec({300, 5, 260});
  step.token_to_req = vec({0, 1, 2, 2});
  step.num_decode_tokens = 2;
  step.decode_valid = {1, 0};
  step.swa = PagedCache{IndexMatrix(3, 40), 8};
  step.c4a = PagedCache{IndexMatrix(3, 40), 2};
  step.c128a = PagedCache{IndexMatrix(3, 2), 2};
  for (int32_t r = 0; r < 3; ++r) {
    for (int32_t j = 0; j < 40; ++j) {
      step.swa.block_table(r, j) = 100 * r + j;
      step.c4a.block_table(r, j) = 1000 + 100 * r + j;
    }
    for (int32_t j = 0; j < 2; ++j) step.c128a.block_table(r, j) = 10 * r + j;
  }
  return step;
}

ModelSchedule tiny_schedule() {
  ModelSchedule s;
  s.name = "tiny";
  s.compress_ratios = {0, 4, 128, 1, 128, 4};
  s.window = 4;
  s.c4a_topk = 3;
  return s;
}

C4aIndexerOutput c4a_picks(int32_t first) {
  C4aIndexerOutput c4a;
  c4a.decode_local = mat(2, 3, {first, first + 1, -1,  //
                                -1, -1, -1});
  c4a.prefill_topk = mat(2, 3, {first, 0, -1,  //
                                first + 2, 1, 0});
  return c4a;
}

TEST(LayerBuilderInputs, SwaOnlyLayer) {
  const Step step = mixed_step();
  const BuilderInputs in = layer_builder_inputs(step, tiny_schedule(), 0, nullptr);
  EXPECT_EQ(in.window, 4);
  EXPECT_EQ(in.ratio, 1);  // config ratio 0 -> builder ratio 1
  EXPECT_EQ(in.topk, 0);
  EXPECT_TRUE(same_matrix(decode_swa_indices(step, 4), in.decode_swa_indices));
  EXPECT_EQ(in.decode_compressed.cols(), 0);
  EXPECT_FALSE(in.decode_compressed_lens.has_value());
  EXPECT_FALSE(in.decode_valid.has_value());
  EXPECT_EQ(in.prefill_topk.rows(), 2);
  EXPECT_EQ(in.prefill_topk.cols(), 0);
  EXPECT_FALSE(in.compressed.has_value());
  EXPECT_TRUE(same_vector(step.query_start_loc, in.query_start_loc));
  EXPECT_TRUE(same_vector(step.seq_lens, in.seq_lens));
  EXPECT_TRUE(same_vector(step.token_to_req, in.token_to_req));
  EXPECT_TRUE(same_matrix(step.swa.block_table, in.swa.block_table));
  EXPECT_EQ(in.swa.block_size, 8);
  // The same for a config ratio of 1.
  EXPECT_EQ(layer_builder_inputs(step, tiny_schedule(), 3, nullptr).ratio, 1);
}

TEST(LayerBuilderInputs, C128aLayer) {
  const Step step = mixed_step();
  const C128aMetadata meta = c128a_metadata(step);
  const BuilderInputs in = layer_builder_inputs(step, tiny_schedule(), 2, nullptr);
  EXPECT_EQ(in.ratio, 128);
  EXPECT_EQ(in.topk, meta.effective_width);
  EXPECT_EQ(in.topk, 128);
  EXPECT_FALSE(in.decode_local);
  EXPECT_TRUE(same_matrix(meta.decode_global, in.decode_compressed));
  ASSERT_TRUE(in.decode_compressed_lens.has_value());
  EXPECT_TRUE(same_vector(meta.decode_lens, *in.decode_compressed_lens));
  EXPECT_FALSE(in.decode_valid.has_value());
  EXPECT_TRUE(same_matrix(meta.prefill_local, in.prefill_topk));
  ASSERT_TRUE(in.compressed.has_value());
  EXPECT_TRUE(same_matrix(step.c128a.block_table, in.compressed->block_table));
  EXPECT_EQ(in.compressed->block_size, 2);
}

TEST(LayerBuilderInputs, C4aLayer) {
  const Step step = mixed_step();
  const C4aIndexerOutput c4a = c4a_picks(5);
  const BuilderInputs in = layer_builder_inputs(step, tiny_schedule(), 1, &c4a);
  EXPECT_EQ(in.ratio, 4);
  EXPECT_EQ(in.topk, 3);
  EXPECT_TRUE(in.decode_local);
  EXPECT_TRUE(same_matrix(c4a.decode_local, in.decode_compressed));
  EXPECT_FALSE(in.decode_compressed_lens.has_value());
  ASSERT_TRUE(in.decode_valid.has_value());
  EXPECT_EQ(*in.decode_valid, (std::vector<uint8_t>{1, 0}));
  EXPECT_TRUE(same_matrix(c4a.prefill_topk, in.prefill_topk));
  ASSERT_TRUE(in.compressed.has_value());
  EXPECT_TRUE(same_matrix(step.c4a.block_table, in.compressed->block_table));
  EXPECT_EQ(in.compressed->block_size, 2);
  // An empty step.decode_valid means all valid: all ones of size D.
  Step all_valid = step;
  all_valid.decode_valid.clear();
  EXPECT_EQ(*layer_builder_inputs(all_valid, tiny_schedule(), 1, &c4a).decode_valid,
            (std::vector<uint8_t>{1, 1}));
}

TEST(LayerBuilderInputs, RejectsMissingC4aOutputAndBadLayer) {
  const Step step = mixed_step();
  EXPECT_TRUE(throws_naming([&] { layer_builder_inputs(step, tiny_schedule(), 1, nullptr); },
                            {"c4a", "layer 1"}));
  EXPECT_TRUE(throws_naming([&] { layer_builder_inputs(step, tiny_schedule(), 6, nullptr); },
                            {"layer = 6"}));
  EXPECT_TRUE(throws_naming([&] { layer_builder_inputs(step, tiny_schedule(), -1, nullptr); },
                            {"layer = -1"}));
  ModelSchedule bad = tiny_schedule();
  bad.compress_ratios[0] = 16;
  EXPECT_TRUE(throws_naming([&] { layer_builder_inputs(step, bad, 0, nullptr); },
                            {"compress_ratio = 16"}));
}

// Hand-checked C4A layer 1 (picks from 5), to tie run_step_uncached to SPEC §3 and §6. W = 4,
// topk 3, Kd 3 -> P = 4. Tables: SWA row r = 100 r + j (block size 8), C4A row r = 1000 + 100 r + j
// (block size 2).
//   t0 (request 0, pos 299): window 296..299 all in SWA block 37 -> 37 * 8 + {0..3} = 296..299;
//      locals 5 -> (1000 + 2) * 2 + 1 = 2005, 6 -> (1000 + 3) * 2 + 0 = 2006; len 4 + 2 = 6
//   t1 (padding): window all -1, picks all -1; len 4 + 0 = 4
//   t2 (request 2, pos 258): window 255..258: 255 -> (200 + 31) * 8 + 7 = 1855,
//      256 -> (200 + 32) * 8 = 1856, 1857, 1858; topk_len = min(259 / 4, 3) = 3:
//      locals 5 -> (1200 + 2) * 2 + 1 = 2405, 0 -> 2400, -1; len 4 + 3 = 7
//   t3 (pos 259): window 1856..1859; locals 7 -> (1200 + 3) * 2 + 1 = 2407, 1 -> 2401,
//      0 -> 2400; len 7
TEST(RunStepUncached, OneOutputPerLayerEqualToItsOwnBuild) {
  const Step step = mixed_step();
  const ModelSchedule schedule = tiny_schedule();
  std::vector<C4aIndexerOutput> c4a(6);
  c4a[1] = c4a_picks(5);
  c4a[5] = c4a_picks(7);
  const std::vector<BuilderOutput> outputs = run_step_uncached(step, schedule, c4a);
  ASSERT_EQ(outputs.size(), 6u);
  for (int32_t layer = 0; layer < 6; ++layer) {
    const BuilderOutput expected = build_mixed_sparse_indices(
        layer_builder_inputs(step, schedule, layer, &c4a[static_cast<size_t>(layer)]));
    EXPECT_TRUE(same_matrix(expected.sparse_indices, outputs[layer].sparse_indices)) << layer;
    EXPECT_TRUE(same_vector(expected.sparse_lens, outputs[layer].sparse_lens)) << layer;
    EXPECT_EQ(outputs[layer].content_errors, 0) << layer;
  }
  // Widths: SWA-only W + 0 = 4; C4A W + round_up(3, 4) = 8; C128A W + 128 = 132.
  EXPECT_EQ(outputs[0].sparse_indices.cols(), 4);
  EXPECT_EQ(outputs[1].sparse_indices.cols(), 8);
  EXPECT_EQ(outputs[2].sparse_indices.cols(), 132);
  // The two C4A layers differ (different picks); the two SWA-only and C128A layers agree.
  EXPECT_FALSE(outputs[1].sparse_indices == outputs[5].sparse_indices);
  EXPECT_TRUE(outputs[0].sparse_indices == outputs[3].sparse_indices);
  EXPECT_TRUE(outputs[2].sparse_indices == outputs[4].sparse_indices);

  EXPECT_TRUE(same_matrix(mat(4, 8, {296, 297, 298, 299, 2005, 2006, -1, -1,       //
                                     -1, -1, -1, -1, -1, -1, -1, -1,               //
                                     1855, 1856, 1857, 1858, 2405, 2400, -1, -1,   //
                                     1856, 1857, 1858, 1859, 2407, 2401, 2400, -1}),
                          outputs[1].sparse_indices));
  EXPECT_TRUE(same_vector(vec({6, 4, 7, 7}), outputs[1].sparse_lens));
}

TEST(RunStepUncached, RejectsWrongNumberOfC4aEntries) {
  const std::vector<C4aIndexerOutput> c4a(5);
  EXPECT_TRUE(throws_naming([&] { run_step_uncached(mixed_step(), tiny_schedule(), c4a); },
                            {"c4a_per_layer", "size 5", "6 layers"}));
}

}  // namespace
}  // namespace dsv4::ref
