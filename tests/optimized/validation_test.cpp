// SPEC §4 structural errors on the optimized path: validate_request_shape (O(1), per build)
// and validate_step_structure (O(T + R), once per step) reject each broken input with
// std::invalid_argument naming the field (and row and value), and accept exactly what the
// reference accepts on random structural mutations.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "harness/generators.h"
#include "harness/hand_cases.h"
#include "harness/staged_request.h"
#include "harness/step_factory.h"
#include "optimized/host_builder.h"
#include "optimized/layer_kind.h"
#include "optimized/step_indexer.h"
#include "optimized/validation.h"
#include "reference/model_schedule.h"
#include "support/assertions.h"

namespace dsv4::opt {
namespace {

using harness::mat;
using harness::StagedRequest;
using testing::throws_naming;

// A valid tiny C4A request whose host structure copies can be mutated independently.
struct Fixture {
  StagedRequest staged{Backend::kHost, harness::tiny_c4a()};
  BuildRequest request = staged.request();
  std::vector<int32_t> qsl{0, 1, 3}, seq_lens{2, 10}, token_to_req{0, 1, 1};
  alignas(16) int32_t output[32] = {};  // where a caller-owned output or status would go
  StepStructureHost host() const { return StepStructureHost{qsl.data(), seq_lens.data(), token_to_req.data()}; }
  ::testing::AssertionResult rejected(const std::vector<std::string>& needles) const {
    const auto thrown = throws_naming([&] { validate_step_structure(request, host()); }, needles);
    if (!thrown) return thrown;
    return same_message(step_structure_error(request, host()), thrown);
  }
  ::testing::AssertionResult shape_rejected(const std::vector<std::string>& needles) const {
    const auto whole = rejected(needles);
    if (!whole) return whole;
    const auto thrown = throws_naming([&] { validate_request_shape(request); }, needles);
    if (!thrown) return thrown;
    return same_message(request_shape_error(request), thrown);
  }
  // The non-throwing form returns exactly the message the throwing form threw.
  static ::testing::AssertionResult same_message(const std::string& returned, const ::testing::AssertionResult& thrown) {
    if (returned == thrown.message()) return thrown;
    return ::testing::AssertionFailure() << "returned \"" << returned << "\", threw \"" << thrown.message() << "\"";
  }
};

// Every hand-worked build is valid: the tiny batches, an empty step, an empty request in the
// middle of a step (a decode request may hold zero tokens).
TEST(Validation, HandCasesAreValid) {
  for (const harness::HandCase& c : harness::hand_cases()) {
    StagedRequest staged(Backend::kHost, c.inputs);
    EXPECT_NO_THROW(validate_request_shape(staged.request())) << c.name;
    EXPECT_NO_THROW(validate_step_structure(staged.request(), staged.host())) << c.name;
    EXPECT_EQ(request_shape_error(staged.request()), "") << c.name;
    EXPECT_EQ(step_structure_error(staged.request(), staged.host()), "") << c.name;
  }
}

// One broken field of the Fixture's request: rejected naming every needle, by the per-step
// check and, for a `shape` error, by the O(1) per-build check too.
struct Broken {
  std::function<void(Fixture&)> mutate;
  std::vector<std::string> needles;
  bool shape = true;
};
void expect_rejected(const std::vector<Broken>& cases) {
  for (const Broken& b : cases) {
    Fixture f;
    b.mutate(f);
    EXPECT_TRUE(b.shape ? f.shape_rejected(b.needles) : f.rejected(b.needles)) << b.needles.front();
  }
}
using F = Fixture;

TEST(Validation, ScalarsBelowTheirMinimum) {
  expect_rejected({{[](F& f) { f.request.window = 0; }, {"window = 0"}},
                   {[](F& f) { f.request.ratio = 0; }, {"ratio = 0"}},
                   {[](F& f) { f.request.topk = -7; }, {"topk = -7"}},
                   {[](F& f) { f.request.swa.block_size = 0; }, {"swa.block_size = 0"}},
                   {[](F& f) { f.request.compressed.block_size = -5; }, {"compressed.block_size = -5"}},
                   {[](F& f) { f.request.topk = INT_MAX; }, {"topk = 2147483647", "int32"}},  // W + P
                   // W + P fits int32, but not once P is rounded up to whole 16-byte chunks
                   {[](F& f) { f.request.topk = INT_MAX - 6; }, {"topk = 2147483641", "int32"}}});
}

TEST(Validation, ViewShapes) {
  expect_rejected({
      {[](F& f) { f.request.decode_swa_indices.cols = 7; }, {"decode_swa_indices", "7 columns", "window = 4"}},
      {[](F& f) { f.request.decode_compressed.rows = 2; }, {"decode_compressed", "2 rows", "D = 1"}},
      {[](F& f) { f.request.prefill_topk.rows = 1; }, {"prefill_topk", "1 rows", "T - D = 2"}},
      {[](F& f) { f.request.prefill_topk.row_stride = 1; }, {"prefill_topk.row_stride = 1"}},
      {[](F& f) { f.request.prefill_topk.data = nullptr; }, {"prefill_topk.data is null"}},
      {[](F& f) { f.request.swa.num_rows = 1; }, {"swa.block_table", "1 rows", "R = 2"}},
      {[](F& f) { f.request.compressed.num_rows = 1; }, {"compressed.block_table", "1 rows", "R = 2"}},  // more rows: SPEC §7
      {[](F& f) { f.request.token_to_req = nullptr; }, {"token_to_req is null"}},
      {[](F& f) { f.request.query_start_loc = nullptr; }, {"query_start_loc is null"}},
      {[](F& f) { f.request.seq_lens = nullptr; }, {"seq_lens is null"}},
      {[](F& f) { f.request.swa.blocks_per_row = -1; }, {"swa.blocks_per_row = -1"}},
      {[](F& f) { f.request.compressed.block_table = nullptr; }, {"compressed.block_table is null"}},
      // SPEC §7 persistent buffers: spans, strides, capacities, caller-owned outputs.
      {[](F& f) { f.request.swa.block_span = 32; }, {"swa.block_span = 32", "swa.block_size = 64"}},
      {[](F& f) { f.request.swa.row_stride = 1; }, {"swa.row_stride = 1", "2 blocks per row"}},
      {[](F& f) { f.request.row_capacity = -1; }, {"row_capacity = -1"}},
      {[](F& f) { f.request.row_capacity = 2; }, {"row_capacity = 2 is below T = 3"}},
      {[](F& f) {
         f.request.run_time_sizes = reinterpret_cast<const StepSizes*>(f.qsl.data());
         f.request.row_capacity = 5;
       },
       {"row_capacity = 5 must equal T_cap = 3"}},
      {[](F& f) { f.request.compressed_capacity = 3; }, {"compressed_capacity = 3 is below P = 4"}},
      {[](F& f) { f.request.compressed_capacity = INT_MAX; }, {"compressed_capacity = 2147483647", "int32"}},
      {[](F& f) { f.request.output.sparse_indices = f.output + 1; }, {"output.sparse_indices is not 16-byte aligned"}},
      {[](F& f) {
         f.request.output.sparse_indices = f.output;
         f.request.output.row_stride = 6;
       },
       {"output.row_stride = 6", "W + P_cap = 8"}},
      {[](F& f) {
         f.request.output.sparse_indices = f.output;
         f.request.output.row_stride = 10;  // wide enough, but rows must start on 16 bytes
       },
       {"output.row_stride = 10", "multiple of 4"}},
      {[](F& f) {
         f.request.output.sparse_indices = f.output;
         f.request.output.row_stride = 8;
       },
       {"output.sparse_lens is null"}},
      {[](F& f) { f.request.output.sparse_lens = f.output; }, {"output.sparse_lens is given without output.sparse_indices"}},
      {[](F& f) { f.request.status = reinterpret_cast<MetadataStatus*>(f.output); }, {"status is given without run_time_sizes"}},
      {[](F& f) {
         f.request.num_decode_tokens = 5;
         f.request.decode_swa_indices.rows = 5;
       },
       {"num_decode_tokens", "D = 5", "T = 3"}},
      {[](F& f) {  // one past T
         f.request.num_decode_tokens = 4;
         f.request.decode_swa_indices.rows = 4;
       },
       {"num_decode_tokens", "D = 4", "exceeds T = 3"}},
      // Lens belong to the global form, validity to the local form.
      {[](F& f) { f.request.decode_compressed_lens = f.request.seq_lens; }, {"decode_compressed_lens", "decode_local = true"}},
      {[](F& f) { f.request.decode_local = false; }, {"decode_valid", "decode_local = false"}}});
  Fixture absent;  // zero columns = absent: any row count
  absent.request.decode_compressed.cols = 0;
  absent.request.decode_compressed.rows = 5;
  EXPECT_NO_THROW(validate_step_structure(absent.request, absent.host()));
  Fixture one_row;  // a single row has no stride
  one_row.request.decode_compressed.row_stride = 1;
  one_row.request.decode_compressed.rows = 1;
  EXPECT_NO_THROW(validate_request_shape(one_row.request));
}

// SPEC §8 parts: a tail build needs the buffer it writes into; a split compressed segment is
// P_cap wide, a window part writes no lengths, and a tail build's buffer (the step's own, W + P
// wide) may have any stride that holds a row. Any part may have padding rows and run-time
// sizes (SPEC §7: a split step graph's builds).
TEST(Validation, RowParts) {
  expect_rejected({
      {[](F& f) { f.request.part = RowPart::kTail; }, {"part = tail", "output.sparse_indices is null"}},
      {[](F& f) {
         f.request.part = RowPart::kCompressed;
         f.request.output = OutputView{f.output, 0, f.output + 16};
       },
       {"output.row_stride = 0", "P_cap = 4"}},
      {[](F& f) {  // wide enough for P_cap, but rows must start on 16 bytes
         f.request.part = RowPart::kCompressed;
         f.request.output = OutputView{f.output, 5, f.output + 16};
       },
       {"output.row_stride = 5", "multiple of 4", "P_cap = 4"}},
      {[](F& f) {
         f.request.part = RowPart::kTail;
         f.request.output = OutputView{f.output, 7, f.output + 24};
       },
       {"output.row_stride = 7", "tail build", "W + P_cap = 8"}},
      {[](F& f) {
         f.request.part = RowPart::kTail;
         f.request.output = OutputView{f.output, 8, nullptr};
       },
       {"output.sparse_lens is null"}}});
  Fixture compressed;  // the segment's own width
  compressed.request.part = RowPart::kCompressed;
  compressed.request.output = OutputView{compressed.output, 4, compressed.output + 16};
  EXPECT_NO_THROW(validate_request_shape(compressed.request));
  Fixture window;  // no lengths
  window.request.part = RowPart::kWindow;
  window.request.output = OutputView{window.output, 8, nullptr};
  EXPECT_NO_THROW(validate_request_shape(window.request));
  Fixture tail;  // an odd stride: the buffer of an odd window
  tail.request.part = RowPart::kTail;
  tail.request.output = OutputView{tail.output + 1, 9, tail.output};
  EXPECT_NO_THROW(validate_request_shape(tail.request));
  Fixture padded;  // padding rows [T, T_cap)
  padded.request.part = RowPart::kWindow;
  padded.request.row_capacity = 4;
  EXPECT_NO_THROW(validate_request_shape(padded.request));
  Fixture run_time;  // sizes read when the build runs
  run_time.request.part = RowPart::kCompressed;
  run_time.request.run_time_sizes = reinterpret_cast<const StepSizes*>(run_time.qsl.data());
  EXPECT_NO_THROW(validate_request_shape(run_time.request));
  EXPECT_STREQ(row_part_name(RowPart::kWhole), "whole");
}

TEST(Validation, StepStructure) {
  expect_rejected({{[](F& f) { f.qsl = {1, 1, 3}; }, {"query_start_loc[0] = 1"}, false},
                   {[](F& f) { f.qsl = {0, 4, 3}; }, {"query_start_loc[2] = 3", "query_start_loc[1] = 4"}, false},
                   {[](F& f) { f.qsl = {0, 1, 2}; }, {"query_start_loc[2] = 2", "T = 3"}, false},
                   {[](F& f) { f.token_to_req = {0, 1, 2}; }, {"token_to_req[2] = 2", "R = 2"}, false},
                   {[](F& f) { f.token_to_req = {0, -1, 1}; }, {"token_to_req[1] = -1"}, false},
                   {[](F& f) { f.token_to_req = {0, 0, 1}; }, {"token_to_req[1] = 0", "query_start_loc"}, false},
                   {[](F& f) { f.token_to_req = {1, 1, 1}; }, {"token_to_req[0] = 1", "query_start_loc"}, false},
                   {[](F& f) { f.seq_lens = {2, 1}; }, {"seq_lens[1] = 1", "query length 2"}, false},
                   // Request 1's SWA row holds 2 blocks of 64 = 128 tokens.
                   {[](F& f) { f.seq_lens = {2, 129}; }, {"seq_lens[1] = 129", "128"}, false},
                   {[](F& f) { f.seq_lens = {2, INT_MAX}; }, {"seq_lens[1] = 2147483647"}, false}});
  Fixture full;
  full.seq_lens = {2, 128};
  EXPECT_NO_THROW(validate_step_structure(full.request, full.host()));
  const Fixture f;  // the host copies themselves missing
  EXPECT_TRUE(throws_naming([&] { validate_step_structure(f.request, {nullptr, f.seq_lens.data(), f.token_to_req.data()}); },
                            {"host.query_start_loc is null"}));
  EXPECT_TRUE(throws_naming([&] { validate_step_structure(f.request, {f.qsl.data(), nullptr, f.token_to_req.data()}); },
                            {"host.seq_lens is null"}));
  EXPECT_TRUE(throws_naming([&] { validate_step_structure(f.request, {f.qsl.data(), f.seq_lens.data(), nullptr}); },
                            {"host.token_to_req is null"}));
}

// A step of many tokens over several requests (the token check's one pass over them): valid
// as made, and with two broken tokens the first in token order is the one named, whichever of
// the two failures (out of range, or another request's id) comes first.
TEST(Validation, TheFirstBrokenTokenOfALargeStepIsNamed) {
  harness::StepShape shape;
  shape.num_decodes = 3;
  shape.decode_context = 500;
  shape.num_prefills = 3;
  shape.prefill_tokens_each = 700;
  shape.prefill_context = 100;
  const ref::Step step = harness::make_step(shape);
  const StagedRequest staged(Backend::kHost,
                             ref::layer_builder_inputs(step, ref::deepseek_v4_flash(), 0, nullptr));
  const StepStructureHost valid = staged.host();
  ASSERT_EQ(step_structure_error(staged.request(), valid), "");
  const int32_t T = staged.request().num_tokens;
  ASSERT_EQ(T, 3 + 3 * 700);
  const std::vector<int32_t> original(valid.token_to_req, valid.token_to_req + T);
  const auto message_with = [&](int32_t t1, int32_t v1, int32_t t2, int32_t v2) {
    std::vector<int32_t> broken = original;
    broken[static_cast<size_t>(t1)] = v1;
    broken[static_cast<size_t>(t2)] = v2;
    return step_structure_error(staged.request(), StepStructureHost{valid.query_start_loc, valid.seq_lens, broken.data()});
  };
  // Token 1500 lies in request 5 (tokens 1403..2102); 1000 in request 4.
  EXPECT_EQ(message_with(1000, 5, 1500, -1),
            "token_to_req[1000] = 5 disagrees with query_start_loc: token 1000 lies in request 4's range [703, 1403)");
  EXPECT_EQ(message_with(1000, 6, 1500, 4), "token_to_req[1000] = 6 is out of range [0, R = 6)");
  EXPECT_EQ(message_with(2102, 0, 2, 7), "token_to_req[2] = 7 is out of range [0, R = 6)");
  EXPECT_EQ(message_with(T - 1, 4, T - 1, 4),
            "token_to_req[2102] = 4 disagrees with query_start_loc: token 2102 lies in request 5's range [1403, 2103)");
}

TEST(Validation, DecodeTokensMustEndAtARequestBoundary) {
  // D = 2 splits request 1 (tokens 1, 2).
  ref::BuilderInputs in = harness::tiny_swa_only();
  in.decode_swa_indices = mat(2, 4, {5, 6, -1, -1, 7, -1, -1, -1});
  in.prefill_topk = ref::IndexMatrix(1, 0);
  StagedRequest staged(Backend::kHost, in);
  EXPECT_NO_THROW(validate_request_shape(staged.request()));
  EXPECT_TRUE(throws_naming([&] { validate_step_structure(staged.request(), staged.host()); },
                            {"D = 2", "decode_swa_indices", "query_start_loc"}));
}

// Random single structural mutations of random valid builds: the optimized validation throws
// exactly when the reference's does (the reference's value check of decode_compressed_lens,
// which lives in backend memory on the optimized path, is left out of the mutations).
TEST(Validation, AgreesWithReferenceOnRandomStructuralMutations) {
  int rejected_count = 0;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    std::mt19937_64 rng(seed);
    auto uniform = [&rng](int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); };
    ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), seed);
    const auto R = static_cast<int32_t>(in.seq_lens.size());
    const auto T = static_cast<int32_t>(in.token_to_req.size());
    const int32_t what = uniform(0, 9);
    switch (what) {
      case 0:
        if (R > 0) in.query_start_loc(uniform(0, R)) += uniform(-2, 2);
        break;
      case 1:
        if (T > 0) in.token_to_req(uniform(0, T - 1)) = uniform(-1, R);
        break;
      case 2:
        if (R > 0) in.seq_lens(uniform(0, R - 1)) += uniform(-3, 200);
        break;
      case 3:
        in.window = uniform(-1, 2);
        in.decode_swa_indices = ref::IndexMatrix::Constant(in.decode_swa_indices.rows(),
                                                           std::max(in.window, 0), -1);
        break;
      case 4:
        in.ratio = uniform(-1, 1);
        break;
      case 5:
        in.swa.block_size = uniform(-1, 2);
        break;
      case 6:
        if (in.compressed) in.compressed->block_size = uniform(-1, 1);
        break;
      case 7:
        in.swa.block_table = ref::IndexMatrix::Zero(std::max(0, R + uniform(-1, 1)),
                                                    in.swa.block_table.cols());
        break;
      case 8: {  // move the decode/prefill boundary
        const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
        const int32_t new_d = std::max(0, D + uniform(-2, 2));
        in.decode_swa_indices = ref::IndexMatrix::Constant(new_d, in.window, -1);
        in.decode_compressed = ref::IndexMatrix(0, 0);
        in.decode_compressed_lens.reset();
        in.decode_valid.reset();
        in.prefill_topk = ref::IndexMatrix::Constant(std::max(0, T - new_d), in.prefill_topk.cols(), -1);
        break;
      }
      default:
        in.topk = uniform(-2, 3);
        break;
    }
    bool reference_rejects = false;
    try {
      ref::validate_builder_inputs(in);
    } catch (const std::invalid_argument&) {
      reference_rejects = true;
    }
    bool optimized_rejects = false;
    std::string message, returned;
    try {
      StagedRequest staged(Backend::kHost, in);
      returned = step_structure_error(staged.request(), staged.host());
      validate_step_structure(staged.request(), staged.host());
    } catch (const std::invalid_argument& e) {
      optimized_rejects = true;
      message = e.what();
    }
    ASSERT_EQ(reference_rejects, optimized_rejects)
        << "seed " << seed << " mutation " << what << ": " << harness::describe(in) << " " << message;
    ASSERT_EQ(returned, message) << "seed " << seed;  // the non-throwing form says the same
    if (optimized_rejects) ++rejected_count;
  }
  EXPECT_GT(rejected_count, 100);  // the mutations do break things
}

// Steps of many requests (decode batches of up to 300, some with prefills behind them), valid
// and with one entry of the host copies broken anywhere, first or last included: the per-step
// check rejects exactly what the reference rejects, and says the same in both forms. Random
// builds are small; these are the sizes whose requests the check passes over in one sweep.
TEST(Validation, AgreesWithReferenceOnManyRequestSteps) {
  int rejected_count = 0, accepted_count = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto uniform = [&rng](int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); };
    harness::StepShape shape;
    shape.num_decodes = uniform(1, 300);
    shape.decode_context = uniform(1, 2000);
    shape.num_prefills = uniform(0, 2);
    shape.prefill_tokens_each = uniform(1, 40);
    shape.prefill_context = uniform(0, 300);
    shape.seed = seed;
    ref::BuilderInputs in = ref::layer_builder_inputs(harness::make_step(shape), ref::deepseek_v4_flash(), 0, nullptr);
    const auto R = static_cast<int32_t>(in.seq_lens.size());
    const auto T = static_cast<int32_t>(in.token_to_req.size());
    const int32_t capacity = static_cast<int32_t>(in.swa.block_table.cols()) * in.swa.block_size;
    const auto pick = [&](int32_t n) { return uniform(0, 3) == 0 ? (uniform(0, 1) ? 0 : n - 1) : uniform(0, n - 1); };
    const int32_t what = uniform(0, 7);
    switch (what) {
      case 0: in.query_start_loc(pick(R + 1)) += uniform(-2, 2); break;
      case 1: in.token_to_req(pick(T)) = uniform(-1, R); break;
      case 2: in.seq_lens(pick(R)) = uniform(0, 3); break;  // below a prefill's query length
      case 3: in.seq_lens(pick(R)) = capacity + uniform(0, 1); break;  // the table's capacity, or one past
      case 4: in.seq_lens(pick(R)) = INT32_MAX - uniform(0, 1); break;
      case 5: {  // the decode/prefill boundary moved into or past a request
        const auto D = static_cast<int32_t>(in.decode_swa_indices.rows()) + uniform(-1, 1);
        in.decode_swa_indices = ref::IndexMatrix::Constant(std::clamp(D, 0, T), in.window, -1);
        in.prefill_topk = ref::IndexMatrix::Constant(T - in.decode_swa_indices.rows(), in.prefill_topk.cols(), -1);
        break;
      }
      default: break;  // left valid
    }
    bool reference_rejects = false;
    try {
      ref::validate_builder_inputs(in);
    } catch (const std::invalid_argument&) {
      reference_rejects = true;
    }
    StagedRequest staged(Backend::kHost, in);
    const std::string returned = step_structure_error(staged.request(), staged.host());
    std::string thrown;
    try {
      validate_step_structure(staged.request(), staged.host());
    } catch (const std::invalid_argument& e) {
      thrown = e.what();
    }
    ASSERT_EQ(reference_rejects, !returned.empty())
        << "seed " << seed << " mutation " << what << " R = " << R << ": " << returned;
    ASSERT_EQ(returned, thrown) << "seed " << seed;
    ++(returned.empty() ? accepted_count : rejected_count);
  }
  EXPECT_GT(rejected_count, 100);  // the mutations do break things
  EXPECT_GT(accepted_count, 50);   // and valid steps pass
}

// The StepIndexer validates once, in its constructor.
TEST(Validation, StepIndexerRejectsABrokenStepUpFront) {
  StagedRequest staged(Backend::kHost, harness::tiny_c4a());
  StepInputs step;
  step.num_requests = 2;
  step.num_tokens = 3;
  step.num_decode_tokens = 1;
  step.window = 4;
  step.query_start_loc = staged.request().query_start_loc;
  step.seq_lens = staged.request().seq_lens;
  step.token_to_req = staged.request().token_to_req;
  step.swa = staged.request().swa;
  step.decode_swa_indices = staged.request().decode_swa_indices;
  const std::vector<int32_t> qsl{0, 1, 3}, bad_seq_lens{2, 1}, t2r{0, 1, 1};
  step.host = StepStructureHost{qsl.data(), bad_seq_lens.data(), t2r.data()};
  auto builder = make_host_builder();
  const auto thrown = throws_naming([&] { StepIndexer indexer(*builder, step); }, {"seq_lens[1] = 1"});
  EXPECT_TRUE(thrown);
  EXPECT_EQ(step_inputs_error(step), thrown.message());  // the non-throwing check says the same
  // A C4A layer without indexer output, and an unknown ratio, are rejected per layer.
  const std::vector<int32_t> seq_lens{2, 10};
  step.host.seq_lens = seq_lens.data();
  EXPECT_EQ(step_inputs_error(step), "");
  StepIndexer indexer(*builder, step);
  EXPECT_TRUE(throws_naming([&] { indexer.layer_indices(4, nullptr); }, {"compress_ratio = 4", "c4a"}));
  EXPECT_TRUE(throws_naming([&] { indexer.layer_indices(16, nullptr); }, {"compress_ratio = 16"}));
  // A step its caller validated with step_inputs_error() is not checked again, and builds alike.
  auto other = make_host_builder();
  StepIndexer prevalidated(*other, step, CacheOptions{}, StepIndexer::Validated{});
  const BuiltIndices a = indexer.layer_indices(1), b = prevalidated.layer_indices(1);
  ASSERT_EQ(a.num_tokens, b.num_tokens);
  ASSERT_EQ(a.width, b.width);
  for (int64_t i = 0; i < int64_t{a.num_tokens} * a.width; ++i) ASSERT_EQ(a.sparse_indices[i], b.sparse_indices[i]);
}

}  // namespace
}  // namespace dsv4::opt
