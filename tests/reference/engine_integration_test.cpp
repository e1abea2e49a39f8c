// SPEC §7 in the reference, against outputs worked out by hand: storage-offset addressing,
// persistent block tables, row and compressed capacities (harness/engine_hand_cases.cpp), strided
// inputs, the C128A capacity rule, and run-time sizes with the metadata checked per row.
#include <gtest/gtest.h>

#include <climits>

#include "harness/engine_hand_cases.h"
#include "reference/metadata_checks.h"
#include "reference/mixed_sparse_indices.h"
#include "reference/step.h"
#include "support/assertions.h"

namespace dsv4::ref {
namespace {

using harness::mat;
using harness::vec;
using testing::same_matrix;
using testing::same_vector;
using testing::throws_naming;

TEST(EngineIntegration, HandCasesGiveTheWorkedOutputs) {
  for (const harness::HandCase& c : harness::engine_hand_cases()) {
    const BuilderOutput out = build_mixed_sparse_indices(c.inputs);
    EXPECT_TRUE(same_matrix(c.expected.sparse_indices, out.sparse_indices)) << c.name;
    EXPECT_TRUE(same_vector(c.expected.sparse_lens, out.sparse_lens)) << c.name;
    EXPECT_EQ(out.content_errors, c.expected.content_errors) << c.name;
  }
}

// The reference takes logical matrices; an engine's strided buffer (row stride 7 for 4
// columns, garbage in the gaps) viewed with its stride gives the same matrix and so the same
// build.
TEST(EngineIntegration, AStridedLayoutChangesNothing) {
  const BuilderInputs dense = harness::tiny_c4a();
  BuilderInputs strided = dense;
  const auto view = [](const std::vector<int32_t>& buffer, Eigen::Index rows, Eigen::Index cols, Eigen::Index stride) {
    using Strided = Eigen::Map<const IndexMatrix, 0, Eigen::OuterStride<>>;
    return IndexMatrix(Strided(buffer.data(), rows, cols, Eigen::OuterStride<>(stride)));
  };
  const std::vector<int32_t> table = {0, 1, -9, -9, -9, -9, -9, 2, 3, -9, -9, -9, -9, -9};
  const std::vector<int32_t> topk = {0, 1, 77, 77, 77, 77, 77, 1, 2, 77, 77, 77, 77, 77};
  strided.swa.block_table = view(table, 2, 2, 7);
  strided.compressed->block_table = view(table, 2, 2, 7);
  strided.prefill_topk = view(topk, 2, 2, 7);
  const BuilderOutput a = build_mixed_sparse_indices(dense);
  const BuilderOutput b = build_mixed_sparse_indices(strided);
  EXPECT_TRUE(same_matrix(a.sparse_indices, b.sparse_indices));
  EXPECT_TRUE(same_vector(a.sparse_lens, b.sparse_lens));
  EXPECT_EQ(b.content_errors, 0);
}

// A C128A layer captured with topk = P_cap (its capacity) gives every row the values and
// length of the SPEC §3 build with topk = E; only the padding is wider.
TEST(EngineIntegration, C128aCapturedAtCapacityEqualsTheBuildAtE) {
  Step step;
  step.max_model_len = 4096;  // max_compressed = round_up(32, 128) = 128
  step.query_start_loc = vec({0, 1, 4});
  step.seq_lens = vec({300, 700});  // decode at pos 299 (n = 2); prefill at 697..699 (n = 5)
  step.token_to_req = vec({0, 1, 1, 1});
  step.num_decode_tokens = 1;
  step.swa = PagedCache{mat(2, 11, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,  //
                                    11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}),
                        64};
  step.c128a = PagedCache{mat(2, 3, {5, 1, 4, 2, 0, 3}), 2};
  const C128aMetadata meta = c128a_metadata(step);
  ASSERT_EQ(meta.effective_width, 128);
  BuilderInputs at_e;
  at_e.window = 4;
  at_e.ratio = 128;
  at_e.topk = meta.effective_width;
  at_e.decode_swa_indices = decode_swa_indices(step, 4);
  at_e.decode_compressed = meta.decode_global;
  at_e.decode_compressed_lens = meta.decode_lens;
  at_e.prefill_topk = meta.prefill_local;
  at_e.query_start_loc = step.query_start_loc;
  at_e.seq_lens = step.seq_lens;
  at_e.token_to_req = step.token_to_req;
  at_e.swa = step.swa;
  at_e.compressed = step.c128a;
  BuilderInputs at_capacity = at_e;
  at_capacity.topk = 256;
  at_capacity.compressed_capacity = 256;
  const BuilderOutput e = build_mixed_sparse_indices(at_e);
  const BuilderOutput cap = build_mixed_sparse_indices(at_capacity);
  ASSERT_EQ(cap.sparse_indices.cols(), 4 + 256);
  EXPECT_TRUE(same_matrix(e.sparse_indices, cap.sparse_indices.leftCols(4 + 128)));
  EXPECT_TRUE((cap.sparse_indices.rightCols(128).array() == -1).all());
  EXPECT_TRUE(same_vector(e.sparse_lens, cap.sparse_lens));
  // By hand: the decode row's n = 300 / 128 = 2 slots (request 0's locals 0, 1 in block 0 ->
  // 5 * 2 + {0, 1}), length 4 + 2; the last prefill token (pos 699): n = 700 / 128 = 5.
  EXPECT_EQ(cap.sparse_indices(0, 4), 10);
  EXPECT_EQ(cap.sparse_indices(0, 5), 11);
  EXPECT_EQ(cap.sparse_indices(0, 6), -1);
  EXPECT_EQ(cap.sparse_lens(0), 6);
  EXPECT_EQ(cap.sparse_lens(3), 4 + 5);
  EXPECT_EQ(e.content_errors, 0);
}

// Structural errors of SPEC §7 still name field, row and value.
TEST(EngineIntegration, StructuralErrorsOfTheNewFields) {
  BuilderInputs in = harness::tiny_c4a();
  in.compressed->block_span = 1;  // below B = 2
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in); }, {"compressed.block_span = 1", "block_size = 2"}));
  in = harness::tiny_c4a();
  in.swa.block_table = mat(1, 2, {0, 1});  // fewer rows than R stays an error
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in); }, {"swa.block_table", "1 rows", "R = 2"}));
  in = harness::tiny_c4a();
  in.row_capacity = 2;  // T = 3
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in); }, {"row_capacity = 2", "T = 3"}));
  in = harness::tiny_c4a();
  in.compressed_capacity = 2;  // P = 4
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in); }, {"compressed_capacity = 2", "P = 4"}));
  in = harness::tiny_c4a();
  in.compressed_capacity = INT32_MAX;
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in); }, {"compressed_capacity", "int32"}));
}

// ---- run-time sizes (device-resident T, D, R), metadata checked per row ----

// Capacities T_cap = 5, R_cap = 3, D_cap = 2, prefill rows 3 around the tiny C4A batch
// (T = 3, D = 1, R = 2): the padding rows hold sentinel request ids and garbage that must
// never be read, the third table row too.
BuilderInputs persistent_tiny_c4a() {
  BuilderInputs in = harness::tiny_c4a();
  in.decode_swa_indices = mat(2, 4, {5, 6, -1, -1, 99, 99, 99, 99});
  in.decode_compressed = mat(2, 2, {2, -1, 99, 99});
  in.decode_valid = std::vector<uint8_t>{1, 1};
  in.prefill_topk = mat(3, 2, {0, 1, 1, 2, 99, 99});
  in.query_start_loc = vec({0, 1, 3, 7});
  in.seq_lens = vec({2, 10, 1 << 30});
  in.token_to_req = vec({0, 1, 1, -1, -1});
  in.swa.block_table = mat(3, 2, {0, 1, 2, 3, -5, -5});
  in.compressed->block_table = mat(3, 2, {0, 1, 2, 3, -5, -5});
  return in;
}
constexpr RunTimeSizes kTinySizes{3, 1, 2};

// The tiny C4A rows (hand_cases.cpp), then two padding rows.
IndexMatrix tiny_c4a_rows_padded() {
  return mat(5, 8, {5,   6,   -1,  -1,  2,  -1, -1, -1,  //
                    133, 134, 135, 136, 4,  5,  -1, -1,  //
                    134, 135, 136, 137, 5,  6,  -1, -1,  //
                    -1,  -1,  -1,  -1,  -1, -1, -1, -1,  //
                    -1,  -1,  -1,  -1,  -1, -1, -1, -1});
}

TEST(RunTimeSizes, ValidMetadataBuildsTheStepAndPadsTheRest) {
  const CheckedBuild b = build_mixed_sparse_indices(persistent_tiny_c4a(), kTinySizes);
  EXPECT_EQ(b.status.check, MetadataCheck::kNone) << describe(b.status);
  EXPECT_EQ(b.status.failures, 0);
  EXPECT_TRUE(same_matrix(tiny_c4a_rows_padded(), b.output.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 6, 6, 0, 0}), b.output.sparse_lens));
  EXPECT_EQ(b.output.content_errors, 0);
}

TEST(RunTimeSizes, AnActiveStepOfOneDecodeToken) {
  BuilderInputs in = persistent_tiny_c4a();
  in.query_start_loc(1) = 1;
  const CheckedBuild b = build_mixed_sparse_indices(in, RunTimeSizes{1, 1, 1});
  EXPECT_EQ(b.status.check, MetadataCheck::kNone) << describe(b.status);
  IndexMatrix want = IndexMatrix::Constant(5, 8, -1);
  want.row(0) = mat(1, 8, {5, 6, -1, -1, 2, -1, -1, -1});
  EXPECT_TRUE(same_matrix(want, b.output.sparse_indices));
  EXPECT_TRUE(same_vector(vec({5, 0, 0, 0, 0}), b.output.sparse_lens));
}

TEST(RunTimeSizes, BadSizesInvalidateEveryRow) {
  struct Case {
    RunTimeSizes sizes;
    MetadataCheck check;
    int32_t value;
  };
  for (const Case& c : {Case{{6, 1, 2}, MetadataCheck::kNumTokens, 6}, Case{{3, 1, 4}, MetadataCheck::kNumRequests, 4},
                        Case{{3, -1, 2}, MetadataCheck::kNumDecodeTokens, -1},
                        Case{{3, 3, 2}, MetadataCheck::kNumDecodeTokens, 3},  // D_cap = 2
                        Case{{-2, 0, 2}, MetadataCheck::kNumTokens, -2}}) {
    const CheckedBuild b = build_mixed_sparse_indices(persistent_tiny_c4a(), c.sizes);
    EXPECT_EQ(b.status.check, c.check) << describe(b.status);
    EXPECT_EQ(b.status.value, c.value) << describe(b.status);
    EXPECT_TRUE((b.output.sparse_indices.array() == -1).all());
    EXPECT_TRUE((b.output.sparse_lens.array() == 0).all());
  }
  // T - D = 4 prefill rows exceed prefill_topk's 3.
  BuilderInputs in = persistent_tiny_c4a();
  in.row_capacity = 5;
  const CheckedBuild b = build_mixed_sparse_indices(in, RunTimeSizes{5, 1, 2});
  EXPECT_EQ(b.status.check, MetadataCheck::kPrefillRows);
  EXPECT_EQ(b.status.value, 4);
}

// One broken field at a time: the status names it (check, row, value), the rows whose metadata
// it breaks are -1 with length 0, every other row is built as before.
TEST(RunTimeSizes, ABrokenRowIsWrittenMinusOneAndReported) {
  struct Case {
    const char* name;
    void (*corrupt)(BuilderInputs&);
    MetadataCheck check;
    int32_t row, value;
    int64_t failures;
    std::vector<int> invalid_rows;
  };
  const Case cases[] = {
      {"token_to_req out of range", [](BuilderInputs& in) { in.token_to_req(1) = 7; },
       MetadataCheck::kTokenRequestRange, 1, 7, 1, {1}},
      {"token_to_req disagrees", [](BuilderInputs& in) { in.token_to_req(2) = 0; },
       MetadataCheck::kTokenRequestMismatch, 2, 0, 1, {2}},
      // Request 1's seq_len 1 is below its query length 2: both its rows.
      {"seq_len below the query", [](BuilderInputs& in) { in.seq_lens(1) = 1; },
       MetadataCheck::kSeqLenBelowQuery, 1, 1, 1, {1, 2}},
      // 2 blocks of 64 hold 128 tokens.
      {"seq_len above the table", [](BuilderInputs& in) { in.seq_lens(1) = 129; },
       MetadataCheck::kSeqLenAboveCapacity, 1, 129, 1, {1, 2}},
      // query_start_loc [0, 2, 3]: request 0 = tokens 0, 1 straddles D = 1; token 1 then
      // disagrees with token_to_req (1), and request 1's length 1 still fits.
      {"a request across D", [](BuilderInputs& in) { in.query_start_loc(1) = 2; },
       MetadataCheck::kTokenRequestMismatch, 1, 1, 2, {0, 1}},
      {"query_start_loc not at 0", [](BuilderInputs& in) { in.query_start_loc(0) = 1; },
       MetadataCheck::kQueryStartFirst, 0, 1, 2, {0}},
      // query_start_loc[2] = 4 != T: request 1's range [1, 4) reaches past T (its rows).
      {"query_start_loc not ending at T", [](BuilderInputs& in) { in.query_start_loc(2) = 4; },
       MetadataCheck::kQueryStartEnd, 2, 4, 1, {1, 2}},
      // query_start_loc [0, 4, 3]: decreasing at 2 (the first failure), request 0 reaches past
      // T, holds more than its seq_len and straddles D; tokens 1, 2 lie outside request 1's
      // [4, 3): five failures, every row.
      {"query_start_loc decreasing", [](BuilderInputs& in) { in.query_start_loc(1) = 4; },
       MetadataCheck::kQueryStartDecreasing, 2, 3, 5, {0, 1, 2}},
  };
  for (const Case& c : cases) {
    BuilderInputs in = persistent_tiny_c4a();
    c.corrupt(in);
    const CheckedBuild b = build_mixed_sparse_indices(in, kTinySizes);
    EXPECT_EQ(b.status.check, c.check) << c.name << ": " << describe(b.status);
    EXPECT_EQ(b.status.row, c.row) << c.name;
    EXPECT_EQ(b.status.value, c.value) << c.name;
    EXPECT_EQ(b.status.failures, c.failures) << c.name << ": " << describe(b.status);
    IndexMatrix want = tiny_c4a_rows_padded();
    IndexVector want_lens = vec({5, 6, 6, 0, 0});
    for (int t : c.invalid_rows) {
      want.row(t).setConstant(-1);
      want_lens(t) = 0;
    }
    EXPECT_TRUE(same_matrix(want, b.output.sparse_indices)) << c.name;
    EXPECT_TRUE(same_vector(want_lens, b.output.sparse_lens)) << c.name;
  }
}

TEST(RunTimeSizes, TheFirstFailureIsTheSmallestCheckThenRow) {
  BuilderInputs in = persistent_tiny_c4a();
  in.seq_lens(1) = 500;      // check 11, row 1
  in.token_to_req(2) = 9;    // check 8, row 2
  in.token_to_req(1) = -3;   // check 8, row 1: the first
  const MetadataStatus s = check_metadata(in, kTinySizes);
  EXPECT_EQ(s.check, MetadataCheck::kTokenRequestRange);
  EXPECT_EQ(s.row, 1);
  EXPECT_EQ(s.value, -3);
  EXPECT_EQ(s.failures, 3);
  EXPECT_EQ(describe(s), "token_to_req[1] = -3 (check 8, 3 failures)");
}

TEST(RunTimeSizes, GlobalDecodeLensOutsideKdAreReported) {
  BuilderInputs in = harness::tiny_c128a();
  in.decode_compressed_lens = vec({3});  // Kd = 2
  const CheckedBuild b = build_mixed_sparse_indices(in, RunTimeSizes{3, 1, 2});
  EXPECT_EQ(b.status.check, MetadataCheck::kDecodeCompressedLens);
  EXPECT_EQ(b.status.value, 3);
  EXPECT_EQ(b.output.sparse_lens(0), 0);
  EXPECT_EQ(b.output.sparse_lens(1), 4);
}

TEST(RunTimeSizes, ShapesFixedAtCaptureStillThrow) {
  BuilderInputs in = persistent_tiny_c4a();
  in.row_capacity = 4;  // must equal token_to_req's 5 rows
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in, kTinySizes); }, {"row_capacity = 4", "T = 5"}));
  in = persistent_tiny_c4a();
  in.swa.block_table = mat(2, 2, {0, 1, 2, 3});  // R_cap = 3
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in, kTinySizes); }, {"swa.block_table", "2 rows", "R = 3"}));
  in = persistent_tiny_c4a();
  in.query_start_loc = vec({0, 1, 3});
  EXPECT_TRUE(throws_naming([&] { build_mixed_sparse_indices(in, kTinySizes); }, {"query_start_loc", "size 3", "R + 1 = 4"}));
}

}  // namespace
}  // namespace dsv4::ref
