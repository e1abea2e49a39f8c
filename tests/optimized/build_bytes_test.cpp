// bench/build_bytes: the bytes of a build's parts (SPEC §8 window and compressed columns) add
// up to the whole build's, each part reading the metadata once, and the window part of the
// tiny batch counted by hand; the translated inputs (the translated floor's) by hand too.
#include <gtest/gtest.h>

#include "bench/build_bytes.h"
#include "harness/generators.h"
#include "harness/hand_cases.h"

namespace dsv4::bench {
namespace {

TEST(BuildBytes, WindowAndCompressedPartsAddUpToTheWholeBuild) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), 31000 + seed);
    const BuildBytes whole = build_bytes(in);
    const BuildBytes window = build_bytes(in, BuildColumns::kWindow);
    const BuildBytes compressed = build_bytes(in, BuildColumns::kCompressed);
    const std::string at = "seed " + std::to_string(31000 + seed) + ": " + harness::describe(in);
    EXPECT_EQ(window.outputs + compressed.outputs, whole.outputs) << at;
    EXPECT_EQ(window.decode_inputs + compressed.decode_inputs, whole.decode_inputs) << at;
    EXPECT_EQ(window.prefill_topk, 0) << at;
    EXPECT_EQ(compressed.prefill_topk, whole.prefill_topk) << at;
    EXPECT_EQ(window.metadata, whole.metadata) << at;
    EXPECT_EQ(compressed.metadata, whole.metadata) << at;
    if (in.compressed) {  // two tables: each part reads its own
      EXPECT_EQ(window.block_tables + compressed.block_tables, whole.block_tables) << at;
    } else {  // one table: an entry both parts read counts once in the whole build
      EXPECT_GE(window.block_tables + compressed.block_tables, whole.block_tables) << at;
    }
    EXPECT_EQ(build_bytes(in, BuildColumns::kWhole).total(), whole.total()) << at;
    // Only the compressed columns translate inputs: the top-k, and the local form's decode inputs.
    EXPECT_EQ(window.translated_inputs, 0) << at;
    EXPECT_EQ(compressed.translated_inputs, whole.translated_inputs) << at;
    const int64_t local_decode = in.decode_local ? int64_t{in.decode_compressed.rows()} * in.decode_compressed.cols() * 4 : 0;
    EXPECT_EQ(whole.translated_inputs, whole.prefill_topk + local_decode) << at;
    EXPECT_LE(whole.translated_inputs, whole.decode_inputs + whole.prefill_topk) << at;
  }
}

// Translated inputs of the tiny batches (D = 1, Kd = 2, top-k 2, prefill positions 8 and 9). C4A:
// the local-form decode row's 2 x 4 bytes and the prefill rows' topk_len = min(9 / 4, 2) = 2 and
// min(10 / 4, 2) = 2 indices: 8 + 16. C128A: the global decode row is copied, and (p + 1) / 128 =
// 0 prefill indices are read: nothing. SWA-only: nothing.
TEST(BuildBytes, TheTinyBatchesTranslatedInputsByHand) {
  EXPECT_EQ(build_bytes(harness::tiny_c4a()).translated_inputs, 24);
  EXPECT_EQ(build_bytes(harness::tiny_c4a()).prefill_topk, 16);
  EXPECT_EQ(build_bytes(harness::tiny_c128a()).translated_inputs, 0);
  EXPECT_EQ(build_bytes(harness::tiny_c128a()).decode_inputs, 16 + 8 + 4);  // SWA row, global row, lens
  EXPECT_EQ(build_bytes(harness::tiny_swa_only()).translated_inputs, 0);
  EXPECT_EQ(build_bytes(harness::tiny_c4a(), BuildColumns::kWindow).translated_inputs, 0);
}

// The tiny batch's SWA-only layer: T = 3, W = 4, D = 1, R = 2. Window part: 3 x 4 x 4 = 48 output
// bytes (no lengths), the decode row 16, metadata 3 x 4 + 2 x 4 + 3 x 4 = 32, and the prefill
// tokens (positions 8 and 9: window positions 5..9) read request 1's SWA block 0 once: 4.
TEST(BuildBytes, TheTinyBatchsWindowPartByHand) {
  const BuildBytes b = build_bytes(harness::tiny_swa_only(), BuildColumns::kWindow);
  EXPECT_EQ(b.outputs, 48);
  EXPECT_EQ(b.decode_inputs, 16);
  EXPECT_EQ(b.prefill_topk, 0);
  EXPECT_EQ(b.metadata, 32);
  EXPECT_EQ(b.block_tables, 4);
}

}  // namespace
}  // namespace dsv4::bench
