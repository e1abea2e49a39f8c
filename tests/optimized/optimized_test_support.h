// Shared by tests/optimized (host backend) and tests/gpu (CUDA backend): one test body runs
// on every backend (as Highway runs one body per target) against the reference oracle.
//  - StagedRequest: a ref::BuilderInputs staged in a backend's memory as an opt::BuildRequest
//    (optionally with padded row strides and misaligned bases, to force the scalar-load paths).
//  - build_matches_reference: validate, build, compare element for element with
//    ref::build_mixed_sparse_indices (indices, lens, content errors); every output element must
//    be written (the output memory is poisoned and rebuilt in place).
//  - random_builder_inputs: valid-structure random builds with random (also corrupted) content.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#if defined(DSV4_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "harness/backend_step.h"
#include "harness/step_factory.h"
#include "optimized/backend_buffer.h"
#include "optimized/builder.h"
#include "optimized/step_indexer.h"
#include "optimized/validation.h"
#include "reference/mixed_sparse_indices.h"
#include "reference/model_schedule.h"

namespace dsv4::opt::testing {

inline ref::IndexVector vec(std::initializer_list<int32_t> values) {
  ref::IndexVector v(static_cast<Eigen::Index>(values.size()));
  Eigen::Index i = 0;
  for (int32_t x : values) v(i++) = x;
  return v;
}

// rows x cols, row by row.
inline ref::IndexMatrix mat(Eigen::Index rows, Eigen::Index cols, std::initializer_list<int32_t> values) {
  ref::IndexMatrix m(rows, cols);
  EXPECT_EQ(static_cast<Eigen::Index>(values.size()), rows * cols) << "mat(): wrong literal count";
  Eigen::Index i = 0;
  for (int32_t x : values) {
    if (i < rows * cols) m(i / cols, i % cols) = x;
    ++i;
  }
  return m;
}

struct StagingOptions {
  int32_t row_padding = 0;  // extra elements between matrix rows (row_stride = cols + padding)
  int32_t misalign = 0;     // matrices start this many elements past a 256-byte boundary
};

// Fills backend memory with a byte pattern (to catch unwritten output elements).
inline void poison(Backend backend, void* p, size_t bytes, unsigned char value) {
  if (bytes == 0) return;
  if (backend == Backend::kHost) {
    std::memset(p, value, bytes);
    return;
  }
#if defined(DSV4_WITH_CUDA)
  // Builds may still run on a non-blocking stream that the legacy-stream memset ignores.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemset(p, value, bytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
#else
  FAIL() << "poison: no CUDA in this build";
#endif
}

// A reference build's inputs in one backend's memory, viewed as a BuildRequest.
class StagedRequest {
 public:
  StagedRequest(Backend backend, const ref::BuilderInputs& in, StagingOptions options = {})
      : backend_(backend), options_(options) {
    const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
    host_qsl_.assign(in.query_start_loc.data(), in.query_start_loc.data() + in.query_start_loc.size());
    host_seq_lens_.assign(in.seq_lens.data(), in.seq_lens.data() + in.seq_lens.size());
    host_token_to_req_.assign(in.token_to_req.data(), in.token_to_req.data() + in.token_to_req.size());
    host_.query_start_loc = host_qsl_.data();
    host_.seq_lens = host_seq_lens_.data();
    host_.token_to_req = host_token_to_req_.data();

    BuildRequest& r = request_;
    r.window = in.window;
    r.ratio = in.ratio;
    r.topk = in.topk;
    r.num_requests = static_cast<int32_t>(in.seq_lens.size());
    r.num_tokens = static_cast<int32_t>(in.token_to_req.size());
    r.num_decode_tokens = D;
    r.decode_swa_indices = matrix(in.decode_swa_indices);
    r.decode_compressed = matrix(in.decode_compressed);
    r.decode_local = in.decode_local;
    if (in.decode_compressed_lens) r.decode_compressed_lens = ints(*in.decode_compressed_lens);
    if (in.decode_valid) {
      std::vector<uint8_t> host = *in.decode_valid;
      host.push_back(1);  // a non-null pointer for "given", even when D = 0
      buffers_.push_back(BackendBuffer::upload(backend_, host));
      r.decode_valid = static_cast<const uint8_t*>(buffers_.back().data());
    }
    r.prefill_topk = matrix(in.prefill_topk);
    r.query_start_loc = ints(in.query_start_loc);
    r.seq_lens = ints(in.seq_lens);
    r.token_to_req = ints(in.token_to_req);
    r.swa = cache(in.swa);
    if (in.compressed) r.compressed = cache(*in.compressed);
  }
  StagedRequest(const StagedRequest&) = delete;
  StagedRequest& operator=(const StagedRequest&) = delete;

  const BuildRequest& request() const { return request_; }
  BuildRequest& request() { return request_; }
  const StepStructureHost& host() const { return host_; }
  Backend backend() const { return backend_; }

 private:
  const int32_t* ints(const ref::IndexVector& v) {
    std::vector<int32_t> host(v.data(), v.data() + v.size());
    host.push_back(0);  // a non-null pointer for "given", even when empty
    buffers_.push_back(BackendBuffer::upload(backend_, host));
    return static_cast<const int32_t*>(buffers_.back().data());
  }

  Int32Matrix matrix(const ref::IndexMatrix& m) {
    Int32Matrix view;
    view.rows = static_cast<int32_t>(m.rows());
    view.cols = static_cast<int32_t>(m.cols());
    view.row_stride = m.cols() + options_.row_padding;
    std::vector<int32_t> host(static_cast<size_t>(options_.misalign + m.rows() * view.row_stride + 1), -77);
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      for (Eigen::Index j = 0; j < m.cols(); ++j) {
        host[static_cast<size_t>(options_.misalign + i * view.row_stride + j)] = m(i, j);
      }
    }
    buffers_.push_back(BackendBuffer::upload(backend_, host));
    view.data = static_cast<const int32_t*>(buffers_.back().data()) + options_.misalign;
    return view;
  }

  PagedCacheView cache(const ref::PagedCache& c) {
    PagedCacheView view;
    view.num_rows = static_cast<int32_t>(c.block_table.rows());
    view.blocks_per_row = static_cast<int32_t>(c.block_table.cols());
    view.block_size = c.block_size;
    std::vector<int32_t> host(c.block_table.data(), c.block_table.data() + c.block_table.size());
    host.push_back(0);  // non-null even when empty
    buffers_.push_back(BackendBuffer::upload(backend_, host));
    view.block_table = static_cast<const int32_t*>(buffers_.back().data());
    return view;
  }

  Backend backend_;
  StagingOptions options_;
  std::vector<BackendBuffer> buffers_;
  std::vector<int32_t> host_qsl_, host_seq_lens_, host_token_to_req_;
  StepStructureHost host_;
  BuildRequest request_;
};

// Exact comparison; the message names the token (and its kind), the column and both values.
inline ::testing::AssertionResult same_output(const ref::BuilderOutput& expected,
                                              const harness::HostIndices& actual,
                                              int64_t actual_errors, int32_t num_decode_tokens) {
  const ref::IndexMatrix& e = expected.sparse_indices;
  const ref::IndexMatrix& a = actual.sparse_indices;
  if (e.rows() != a.rows() || e.cols() != a.cols()) {
    return ::testing::AssertionFailure() << "shape: reference " << e.rows() << "x" << e.cols()
                                         << ", optimized " << a.rows() << "x" << a.cols();
  }
  for (Eigen::Index t = 0; t < e.rows(); ++t) {
    for (Eigen::Index c = 0; c < e.cols(); ++c) {
      if (e(t, c) != a(t, c)) {
        return ::testing::AssertionFailure()
               << "sparse_indices differ at token " << t
               << (t < num_decode_tokens ? " (decode)" : " (prefill)") << ", column " << c
               << ": reference " << e(t, c) << ", optimized " << a(t, c);
      }
    }
    if (expected.sparse_lens(t) != actual.sparse_lens(t)) {
      return ::testing::AssertionFailure()
             << "sparse_lens differ at token " << t << ": reference " << expected.sparse_lens(t)
             << ", optimized " << actual.sparse_lens(t);
    }
  }
  if (expected.content_errors != actual_errors) {
    return ::testing::AssertionFailure() << "content errors: reference " << expected.content_errors
                                         << ", optimized " << actual_errors;
  }
  return ::testing::AssertionSuccess();
}

// Validates (as a StepIndexer would), builds, poisons the output, rebuilds into the same
// (recycled) memory and compares with the reference.
inline ::testing::AssertionResult build_matches_reference(MixedSparseIndicesBuilder& builder,
                                                          const ref::BuilderInputs& in,
                                                          StagingOptions options = {}) {
  const ref::BuilderOutput expected = ref::build_mixed_sparse_indices(in);
  StagedRequest staged(builder.backend(), in, options);
  validate_step_structure(staged.request(), staged.host());

  builder.release_outputs();
  (void)builder.take_content_errors();
  const BuiltIndices first = builder.build(staged.request());
  const size_t bytes = static_cast<size_t>(first.num_tokens) * static_cast<size_t>(first.width) * 4;
  poison(builder.backend(), first.sparse_indices, bytes, 0x5a);
  poison(builder.backend(), first.sparse_lens, static_cast<size_t>(first.num_tokens) * 4, 0xa5);
  (void)builder.take_content_errors();
  builder.release_outputs();
  const BuiltIndices built = builder.build(staged.request());
  if (built.sparse_indices != first.sparse_indices || built.sparse_lens != first.sparse_lens) {
    return ::testing::AssertionFailure() << "the recycled workspace did not return the same memory";
  }
  const int64_t errors = builder.take_content_errors();
  const harness::HostIndices actual = harness::download(builder.backend(), built);
  builder.release_outputs();
  return same_output(expected, actual, errors, static_cast<int32_t>(in.decode_swa_indices.rows()));
}

// ---- The upstream cache test's tiny batch (vLLM test_flashinfer_sparse_indices_cache) ----
//   W = 4, SWA block size 64, block tables [[0, 1], [2, 3]]
//   request 0: one decode token (t = 0), seq_len 2, SWA row [5, 6, -1, -1]
//   request 1: two prefill tokens (t = 1, 2), seq_len 10 -> positions 8 and 9
inline ref::BuilderInputs tiny_swa_only() {
  ref::BuilderInputs in;
  in.window = 4;
  in.ratio = 1;
  in.topk = 0;
  in.decode_swa_indices = mat(1, 4, {5, 6, -1, -1});
  in.prefill_topk = ref::IndexMatrix(2, 0);
  in.query_start_loc = vec({0, 1, 3});
  in.seq_lens = vec({2, 10});
  in.token_to_req = vec({0, 1, 1});
  in.swa.block_table = mat(2, 2, {0, 1, 2, 3});
  in.swa.block_size = 64;
  return in;
}

// C128A: global decode [9, 10] with lens 2; prefill local [[0, 1], [1, 2]]; compressed block
// size 2 over the same table; topk 2.
inline ref::BuilderInputs tiny_c128a() {
  ref::BuilderInputs in = tiny_swa_only();
  in.ratio = 128;
  in.topk = 2;
  in.decode_compressed = mat(1, 2, {9, 10});
  in.decode_local = false;
  in.decode_compressed_lens = vec({2});
  in.prefill_topk = mat(2, 2, {0, 1, 1, 2});
  in.compressed = ref::PagedCache{mat(2, 2, {0, 1, 2, 3}), 2};
  return in;
}

// C4A: local decode [2, -1] (valid); prefill picks as C128A; compressed block size 2.
inline ref::BuilderInputs tiny_c4a() {
  ref::BuilderInputs in = tiny_swa_only();
  in.ratio = 4;
  in.topk = 2;
  in.decode_compressed = mat(1, 2, {2, -1});
  in.decode_local = true;
  in.decode_valid = std::vector<uint8_t>{1};
  in.prefill_topk = mat(2, 2, {0, 1, 1, 2});
  in.compressed = ref::PagedCache{mat(2, 2, {0, 1, 2, 3}), 2};
  return in;
}

// More hand-worked cases (expected outputs in host_builder_test.cpp).

// W = 3 (scalar path), topk 5 -> P = 8. One prefill token at pos 23; SWA block size 8, table
// [3, 0, 7]; compressed block size 4, table [5, 1]; Kp = 6 > topk.
inline ref::BuilderInputs odd_window_prefill() {
  ref::BuilderInputs in;
  in.window = 3;
  in.ratio = 4;
  in.topk = 5;
  in.decode_swa_indices = ref::IndexMatrix(0, 3);
  in.prefill_topk = mat(1, 6, {0, 4, 5, 7, 3, 2});
  in.query_start_loc = vec({0, 1});
  in.seq_lens = vec({24});
  in.token_to_req = vec({0});
  in.swa = ref::PagedCache{mat(1, 3, {3, 0, 7}), 8};
  in.compressed = ref::PagedCache{mat(1, 2, {5, 1}), 4};
  return in;
}

// Local decode form: a speculative request (t0, t1, with a -5 = no entry), a padding token (t2).
inline ref::BuilderInputs local_decode_with_padding() {
  ref::BuilderInputs in;
  in.window = 2;
  in.ratio = 4;
  in.topk = 0;
  in.decode_swa_indices = mat(3, 2, {4, 5, 5, 6, -1, -1});
  in.decode_compressed = mat(3, 3, {0, 3, -1,   //
                                    -5, 1, -1,  //
                                    5, 0, -1});
  in.decode_local = true;
  in.decode_valid = std::vector<uint8_t>{1, 1, 0};
  in.prefill_topk = ref::IndexMatrix(0, 0);
  in.query_start_loc = vec({0, 2, 3});
  in.seq_lens = vec({7, 1});
  in.token_to_req = vec({0, 0, 1});
  in.swa = ref::PagedCache{mat(2, 1, {0, 1}), 8};
  in.compressed = ref::PagedCache{mat(2, 2, {2, 9, 7, 1}), 4};
  return in;
}

// Global decode without lens (compressed length Kd), Kd = 3 > topk.
inline ref::BuilderInputs global_decode_without_lens() {
  ref::BuilderInputs in = tiny_c128a();
  in.decode_compressed_lens.reset();
  in.decode_compressed = mat(1, 3, {123456, -3, 7});
  return in;
}

// SPEC §4 content errors on the tiny C4A batch (and C128A for the global form).
inline ref::BuilderInputs prefill_block_past_table_width() {
  ref::BuilderInputs in = tiny_c4a();
  in.prefill_topk = mat(2, 2, {0, 1, 1, 4});
  return in;
}
inline ref::BuilderInputs compressed_negative_table_entry() {
  ref::BuilderInputs in = tiny_c4a();
  in.compressed->block_table = mat(2, 2, {0, 1, 2, -1});
  return in;
}
inline ref::BuilderInputs decode_local_block_past_table_width() {
  ref::BuilderInputs in = tiny_c4a();
  in.decode_compressed = mat(1, 2, {6, -1});
  return in;
}
inline ref::BuilderInputs prefill_swa_negative_table_entry() {
  ref::BuilderInputs in = tiny_c4a();
  in.swa.block_table = mat(2, 2, {0, 1, -1, 3});
  return in;
}
inline ref::BuilderInputs slot_beyond_int32() {
  ref::BuilderInputs in = tiny_c4a();
  in.compressed->block_table = mat(2, 2, {0, 1, 1 << 30, 3});
  return in;
}
inline ref::BuilderInputs global_slots_and_late_picks_unread() {
  ref::BuilderInputs in = tiny_c128a();
  in.decode_compressed = mat(1, 2, {123456, -3});
  in.compressed->block_table = mat(2, 2, {-1, -1, -1, -1});
  in.prefill_topk = mat(2, 2, {99, 99, 99, 99});
  return in;
}

struct NamedCase {
  const char* name;
  ref::BuilderInputs inputs;
};
inline std::vector<NamedCase> hand_cases() {
  ref::BuilderInputs no_compressed = tiny_c4a();
  no_compressed.compressed.reset();
  return {{"tiny SWA-only", tiny_swa_only()},
          {"tiny C128A", tiny_c128a()},
          {"tiny C4A", tiny_c4a()},
          {"tiny C4A without compressed cache", no_compressed},
          {"odd window prefill", odd_window_prefill()},
          {"local decode with padding", local_decode_with_padding()},
          {"global decode without lens", global_decode_without_lens()},
          {"prefill block past table width", prefill_block_past_table_width()},
          {"compressed negative table entry", compressed_negative_table_entry()},
          {"decode local block past table width", decode_local_block_past_table_width()},
          {"prefill SWA negative table entry", prefill_swa_negative_table_entry()},
          {"slot beyond int32", slot_beyond_int32()},
          {"global slots and late picks unread", global_slots_and_late_picks_unread()}};
}

// ---- Random builds: valid structure, random content (some of it corrupted) ----
struct RandomShape {
  int32_t max_requests = 6;
  int32_t max_decode_query = 3;    // speculative decoding; 0 = an empty request
  int32_t max_prefill_query = 12;
  int32_t max_context = 300;
  int32_t max_topk = 24;
  bool corrupt = true;             // negative / out-of-width / huge table entries, wild locals
  bool decode_only = false;        // every request a decode (the decode-only kernels)
};

inline int32_t uniform(std::mt19937_64& rng, int32_t lo, int32_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
}

inline ref::BuilderInputs random_builder_inputs(std::mt19937_64& rng, const RandomShape& shape = {}) {
  static constexpr int32_t kWindows[] = {1, 2, 3, 4, 5, 7, 8, 16, 128};
  static constexpr int32_t kRatios[] = {1, 2, 3, 4, 4, 128};
  static constexpr int32_t kBlockSizes[] = {1, 2, 3, 4, 5, 8, 16, 64};
  auto pick = [&](const auto& options) {
    return options[static_cast<size_t>(uniform(rng, 0, static_cast<int32_t>(std::size(options)) - 1))];
  };
  auto chance = [&](int32_t percent) { return uniform(rng, 0, 99) < percent; };

  ref::BuilderInputs in;
  in.window = pick(kWindows);
  in.ratio = pick(kRatios);
  in.topk = uniform(rng, 0, shape.max_topk);
  const int32_t R = uniform(rng, 0, shape.max_requests);
  const int32_t decode_requests = shape.decode_only ? R : uniform(rng, 0, R);
  in.query_start_loc = ref::IndexVector::Zero(R + 1);
  in.seq_lens = ref::IndexVector::Zero(R);
  for (int32_t r = 0; r < R; ++r) {
    const int32_t q = r < decode_requests ? uniform(rng, 0, shape.max_decode_query)
                                          : uniform(rng, 0, shape.max_prefill_query);
    in.query_start_loc(r + 1) = in.query_start_loc(r) + q;
    in.seq_lens(r) = q + uniform(rng, 0, shape.max_context);
  }
  const int32_t T = in.query_start_loc(R);
  const int32_t D = in.query_start_loc(decode_requests);
  in.token_to_req = ref::IndexVector::Zero(T);
  for (int32_t r = 0; r < R; ++r) {
    for (int32_t t = in.query_start_loc(r); t < in.query_start_loc(r + 1); ++t) in.token_to_req(t) = r;
  }
  const int32_t max_seq = R > 0 ? in.seq_lens.maxCoeff() : 0;

  auto table = [&](int32_t rows, int32_t cols) {
    ref::IndexMatrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      int32_t v = uniform(rng, 0, 5000);
      if (shape.corrupt && chance(4)) v = -uniform(rng, 1, 3);
      if (shape.corrupt && chance(1)) v = (1 << 30) + uniform(rng, 0, 5);  // slot beyond int32
      m.data()[i] = v;
    }
    return m;
  };
  in.swa.block_size = pick(kBlockSizes);
  const int32_t swa_blocks = (max_seq + in.swa.block_size - 1) / in.swa.block_size + uniform(rng, 0, 2);
  in.swa.block_table = table(R, swa_blocks);

  const int32_t max_local = std::max(1, (max_seq + 1) / std::max(in.ratio, 1));
  const bool has_compressed = chance(80);
  if (has_compressed) {
    ref::PagedCache c;
    c.block_size = pick(kBlockSizes);
    // Usually wide enough for every local index, sometimes too narrow (content errors).
    int32_t blocks = (max_local + c.block_size - 1) / c.block_size + uniform(rng, 0, 1);
    if (shape.corrupt && chance(20)) blocks = uniform(rng, 0, blocks);
    c.block_table = table(R, blocks);
    in.compressed = c;
  }
  const int32_t local_bound = shape.corrupt ? max_local + 8 : max_local - 1;
  auto local_value = [&]() {
    if (chance(15)) return -uniform(rng, 1, 3);  // no entry (-1 and below)
    return uniform(rng, 0, std::max(0, local_bound));
  };

  const int32_t Kd = chance(25) ? 0 : uniform(rng, 0, shape.max_topk);
  in.decode_local = chance(50);
  in.decode_swa_indices = ref::IndexMatrix(D, in.window);
  for (Eigen::Index i = 0; i < in.decode_swa_indices.size(); ++i) {
    in.decode_swa_indices.data()[i] = chance(20) ? -1 : uniform(rng, -3, 100000);
  }
  in.decode_compressed = ref::IndexMatrix(chance(20) && Kd == 0 ? 0 : D, Kd);
  for (Eigen::Index i = 0; i < in.decode_compressed.size(); ++i) {
    in.decode_compressed.data()[i] = in.decode_local ? local_value() : uniform(rng, -3, 100000);
  }
  if (!in.decode_local && chance(60)) {
    ref::IndexVector lens(D);
    for (int32_t t = 0; t < D; ++t) lens(t) = uniform(rng, 0, Kd);
    in.decode_compressed_lens = lens;
  }
  if (in.decode_local && chance(60)) {
    std::vector<uint8_t> valid(static_cast<size_t>(D));
    for (auto& v : valid) v = chance(80) ? 1 : 0;
    in.decode_valid = valid;
  }
  const int32_t Kp = chance(20) ? 0 : uniform(rng, 0, shape.max_topk + 4);
  in.prefill_topk = ref::IndexMatrix(T - D, Kp);
  for (Eigen::Index i = 0; i < in.prefill_topk.size(); ++i) in.prefill_topk.data()[i] = local_value();
  // Sometimes runs of consecutive local indices, as C128A's positional top-k (the kernels read
  // the table once for a run inside one block): from a random start, across block boundaries
  // and, corrupt, past the table.
  auto runs = [&](ref::IndexMatrix& m) {
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      const int32_t start = uniform(rng, shape.corrupt ? -2 : 0, std::max(0, local_bound));
      for (Eigen::Index c = 0; c < m.cols(); ++c) {
        const int32_t value = start + static_cast<int32_t>(c);
        m(r, c) = !shape.corrupt && value > local_bound ? -1 : value;  // valid: -1 past the last
      }
    }
  };
  if (chance(30)) runs(in.prefill_topk);
  if (in.decode_local && chance(30)) runs(in.decode_compressed);
  return in;
}

// A short description of a build for failure messages.
inline std::string describe(const ref::BuilderInputs& in) {
  std::ostringstream s;
  s << "W=" << in.window << " ratio=" << in.ratio << " topk=" << in.topk
    << " R=" << in.seq_lens.size() << " T=" << in.token_to_req.size()
    << " D=" << in.decode_swa_indices.rows() << " Kd=" << in.decode_compressed.cols()
    << " Kp=" << in.prefill_topk.cols() << (in.decode_local ? " local" : " global")
    << (in.decode_compressed_lens ? " lens" : "") << (in.decode_valid ? " valid" : "")
    << " swaB=" << in.swa.block_size
    << (in.compressed ? " cB=" + std::to_string(in.compressed->block_size) : std::string(" no-compressed"));
  return s.str();
}

// ---- Whole steps: schedules through StepIndexer vs ref::run_step_uncached ----

// Counts build() calls and forwards everything (the upstream test's counting fake, as a
// decorator).
class CountingBuilder final : public MixedSparseIndicesBuilder {
 public:
  explicit CountingBuilder(MixedSparseIndicesBuilder& inner) : inner_(inner) {}
  Backend backend() const override { return inner_.backend(); }
  BuiltIndices build(const BuildRequest& request) override {
    ++calls_;
    return inner_.build(request);
  }
  int64_t take_content_errors() override { return inner_.take_content_errors(); }
  void release_outputs() override { inner_.release_outputs(); }
  int64_t calls() const { return calls_; }

 private:
  MixedSparseIndicesBuilder& inner_;
  int64_t calls_ = 0;
};

// The first `layers` layers of a schedule (keeps every kind and the cache hits, costs less).
inline ref::ModelSchedule first_layers(ref::ModelSchedule schedule, int32_t layers) {
  schedule.compress_ratios.resize(static_cast<size_t>(std::min(layers, schedule.num_layers())));
  schedule.name += " (first " + std::to_string(schedule.num_layers()) + " layers)";
  return schedule;
}

struct StepRun {
  int64_t builder_calls = 0;  // seen by a counting decorator around the builder
  int64_t cache_hits = 0;
};

// Runs every layer of `schedule` for `step` through a StepIndexer on `builder` and compares
// each layer's output with the reference's uncached run, element for element. Content errors:
// uncached, the sum over all layers; cached, the sum over the layers actually built (each C4A
// layer and the first layer of each cacheable key). With the cache on, every layer of a
// cacheable kind must return the first such layer's buffers.
inline ::testing::AssertionResult step_matches_reference(
    MixedSparseIndicesBuilder& builder, const ref::Step& step, const ref::ModelSchedule& schedule,
    const std::vector<ref::C4aIndexerOutput>& c4a, CacheOptions options, StepRun* run = nullptr) {
  const std::vector<ref::BuilderOutput> expected = ref::run_step_uncached(step, schedule, c4a);
  const harness::BackendStep staged(builder.backend(), step, schedule, c4a);
  CountingBuilder counting(builder);
  (void)builder.take_content_errors();
  int64_t expected_errors = 0;
  {
    StepIndexer indexer(counting, staged.inputs(), options);
    const BuiltIndices* first_of_kind[3] = {nullptr, nullptr, nullptr};
    std::vector<BuiltIndices> built(static_cast<size_t>(schedule.num_layers()));
    for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
      const int32_t ratio = schedule.compress_ratios[static_cast<size_t>(layer)];
      const LayerKind kind = layer_kind_from_ratio(ratio);
      built[static_cast<size_t>(layer)] = indexer.layer_indices(ratio, staged.c4a(layer));
      const BuiltIndices& b = built[static_cast<size_t>(layer)];
      const BuiltIndices*& first = first_of_kind[static_cast<size_t>(kind)];
      const bool cached_hit = options.enabled && is_cacheable(kind) && first != nullptr;
      if (cached_hit && (b.sparse_indices != first->sparse_indices || b.sparse_lens != first->sparse_lens)) {
        return ::testing::AssertionFailure() << schedule.name << " layer " << layer << " ("
                                             << layer_kind_name(kind)
                                             << "): a cache hit returned other buffers than the first build";
      }
      if (first == nullptr) first = &b;
      if (!cached_hit) expected_errors += expected[static_cast<size_t>(layer)].content_errors;
    }
    for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
      const harness::HostIndices actual = harness::download(builder.backend(), built[static_cast<size_t>(layer)]);
      const auto same = same_output(expected[static_cast<size_t>(layer)], actual,
                                    expected[static_cast<size_t>(layer)].content_errors,
                                    step.num_decode_tokens);
      if (!same) {
        return ::testing::AssertionFailure()
               << schedule.name << " layer " << layer << " ("
               << layer_kind_name(layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(layer)]))
               << ", " << backend_name(builder.backend()) << (options.enabled ? ", cached" : ", uncached")
               << "): " << same.message();
      }
    }
    const int64_t errors = indexer.content_errors();
    if (errors != expected_errors) {
      return ::testing::AssertionFailure() << schedule.name << ": content errors " << errors
                                           << ", reference " << expected_errors;
    }
    if (run != nullptr) {
      run->builder_calls = counting.calls();
      run->cache_hits = indexer.cache().hits();
    }
  }  // the indexer ends the step: outputs released
  return ::testing::AssertionSuccess();
}

// Two consecutive steps of the same shape get the same output memory for every layer: the
// workspace replays its chunks, so steady-state steps allocate nothing.
inline ::testing::AssertionResult steady_state_reuses_workspace(
    MixedSparseIndicesBuilder& builder, const ref::Step& step, const ref::ModelSchedule& schedule,
    const std::vector<ref::C4aIndexerOutput>& c4a) {
  const harness::BackendStep staged(builder.backend(), step, schedule, c4a);
  std::vector<const int32_t*> first;
  for (int s = 0; s < 3; ++s) {
    StepIndexer indexer(builder, staged.inputs());
    for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
      const BuiltIndices built =
          indexer.layer_indices(schedule.compress_ratios[static_cast<size_t>(layer)], staged.c4a(layer));
      if (s == 0) {
        first.push_back(built.sparse_indices);
      } else if (built.sparse_indices != first[static_cast<size_t>(layer)]) {
        return ::testing::AssertionFailure() << "step " << s << " layer " << layer
                                             << ": output memory moved between steps";
      }
    }
    (void)indexer.content_errors();
    indexer.end_step();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace dsv4::opt::testing
