// Structural validation (SPEC §4): the same rules as the reference's validate_builder_inputs,
// split into an O(1) per-build shape check and an O(T + R) once-per-step check on host copies.
// The checks return their verdict instead of throwing: the Python binding raises from its own
// code (the pip-built module crashed on the H200 when these errors were thrown here, never on
// the reference's or the binding's own), and only the two validate_* wrappers throw.
#include "optimized/validation.h"

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace dsv4::opt {
namespace {

// The first failed check's message. A check returns true when it passes, else records why
// and returns false, so that a validation is a chain `check && check && ...` that stops at the
// first failure. Nothing is assembled (or allocated) while checks pass: the per-layer path
// must not allocate.
class Checks {
 public:
  template <class... Parts>
  bool fail(const Parts&... parts) {
    (append(parts), ...);
    return false;
  }
  std::string message;

 private:
  void append(const char* part) { message += part; }
  template <class Number>
  void append(Number part) {
    message += std::to_string(part);
  }
};

bool at_least(Checks& check, const char* field, int64_t value, int64_t minimum) {
  return value >= minimum || check.fail(field, " = ", value, " must be >= ", minimum);
}

// A row-major view: `rows` x `cols` as expected, strides that keep rows apart, data present.
bool matrix_ok(Checks& check, const char* field, const Int32Matrix& m, int64_t rows, const char* rows_name,
               int64_t cols, const char* cols_name) {
  if (m.rows != rows) return check.fail(field, " has ", m.rows, " rows, expected ", rows_name, " = ", rows);
  if (m.cols != cols) return check.fail(field, " has ", m.cols, " columns, expected ", cols_name, " = ", cols);
  if (m.rows > 1 && m.row_stride < m.cols) {
    return check.fail(field, ".row_stride = ", m.row_stride, " is below its ", m.cols, " columns");
  }
  if (int64_t{m.rows} * m.cols > 0 && m.data == nullptr) return check.fail(field, ".data is null");
  return true;
}

bool cache_ok(Checks& check, const char* name, const PagedCacheView& cache, int32_t num_requests) {
  if (cache.block_size < 1) return check.fail(name, ".block_size = ", cache.block_size, " must be >= 1");
  if (cache.block_span != 0 && cache.block_span < cache.block_size) {
    return check.fail(name, ".block_span = ", cache.block_span, " is below ", name, ".block_size = ",
                      cache.block_size, " (0 means block_size)");
  }
  if (cache.row_stride != 0 && cache.row_stride < cache.blocks_per_row) {
    return check.fail(name, ".row_stride = ", cache.row_stride, " is below its ", cache.blocks_per_row,
                      " blocks per row (0 means dense)");
  }
  if (cache.blocks_per_row < 0) return check.fail(name, ".blocks_per_row = ", cache.blocks_per_row, " must be >= 0");
  // A persistent [max_num_reqs][max_blocks] table may hold more rows (SPEC §7); rows >= R
  // are never read.
  if (cache.num_rows < num_requests) {
    return check.fail(name, ".block_table has ", cache.num_rows, " rows, fewer than R = ", num_requests);
  }
  if (int64_t{cache.num_rows} * cache.blocks_per_row > 0 && cache.block_table == nullptr) {
    return check.fail(name, ".block_table is null");
  }
  return true;
}

// SPEC §7: capacities, caller-owned outputs, run-time sizes and the status word.
bool engine_fields_ok(Checks& check, const BuildRequest& r) {
  if (!at_least(check, "row_capacity", r.row_capacity, 0)) return false;
  if (r.run_time_sizes != nullptr && r.row_capacity != 0 && r.row_capacity != r.num_tokens) {
    return check.fail("row_capacity = ", r.row_capacity, " must equal T_cap = ", r.num_tokens,
                      " (num_tokens: the rows of token_to_req) with run-time sizes");
  }
  if (r.row_capacity != 0 && r.row_capacity < r.num_tokens) {
    return check.fail("row_capacity = ", r.row_capacity, " is below T = ", r.num_tokens);
  }
  if (!at_least(check, "compressed_capacity", r.compressed_capacity, 0)) return false;
  const int32_t P = padded_compressed_width(r.topk, r.decode_compressed.cols);
  if (r.compressed_capacity != 0 && r.compressed_capacity < P) {
    return check.fail("compressed_capacity = ", r.compressed_capacity, " is below P = ", P,
                      " (round_up(max(topk, Kd), 4))");
  }
  if (int64_t{r.window} + r.compressed_capacity > INT32_MAX) {
    return check.fail("compressed_capacity = ", r.compressed_capacity, ": the output width W + P_cap exceeds int32");
  }
  const OutputView& out = r.output;
  if (out.sparse_indices != nullptr && r.part == RowPart::kTail) {
    // The step's own combined buffer, as the build that wrote its window columns made it
    // (an odd window gives rows W + P wide): any stride that holds a row.
    if (out.row_stride < output_width(r) || out.row_stride > INT32_MAX) {
      return check.fail("output.row_stride = ", out.row_stride, " of a tail build must be >= W + P_cap = ",
                        output_width(r));
    }
    if (out.sparse_lens == nullptr && output_rows(r) > 0) return check.fail("output.sparse_lens is null");
  } else if (out.sparse_indices != nullptr) {
    if (reinterpret_cast<uintptr_t>(out.sparse_indices) % 16 != 0) {
      return check.fail("output.sparse_indices is not 16-byte aligned");
    }
    if (out.row_stride < part_output_width(r) || out.row_stride % 4 != 0 || out.row_stride > INT32_MAX) {
      return check.fail("output.row_stride = ", out.row_stride, " must be a multiple of 4 and >= ",
                        r.part == RowPart::kCompressed ? "P_cap = " : "W + P_cap = ", part_output_width(r));
    }
    // A window part writes no lengths.
    if (out.sparse_lens == nullptr && output_rows(r) > 0 && r.part != RowPart::kWindow) {
      return check.fail("output.sparse_lens is null");
    }
  } else if (out.sparse_lens != nullptr) {
    return check.fail("output.sparse_lens is given without output.sparse_indices");
  }
  if (r.status != nullptr && r.run_time_sizes == nullptr) {
    return check.fail("status is given without run_time_sizes (the host validates host-sized steps)");
  }
  return true;
}

// SPEC §8 parts: any step, host-sized or with run-time sizes and padding rows (SPEC §7); a
// tail build writes into a buffer an earlier build made.
bool part_ok(Checks& check, const BuildRequest& r) {
  if (r.part == RowPart::kWhole) return true;
  if (r.part == RowPart::kTail && r.output.sparse_indices == nullptr && output_rows(r) > 0) {
    return check.fail("part = tail needs output: the combined buffer whose window columns an earlier build wrote "
                      "(output.sparse_indices is null)");
  }
  return true;
}

// The per-step token plan: host-sized steps, 8-byte entries, the written plan somewhere and
// never the one read.
bool token_plan_ok(Checks& check, const BuildRequest& r) {
  const auto misaligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % alignof(TokenPlanEntry) != 0; };
  if (r.run_time_sizes != nullptr && (r.token_plan != nullptr || r.write_token_plan)) {
    return check.fail(r.token_plan != nullptr ? "token_plan" : "write_token_plan",
                      " is given with run_time_sizes (a token plan covers a host-sized step's T rows)");
  }
  if (misaligned(r.token_plan)) return check.fail("token_plan is not 8-byte aligned");
  if (r.output.token_plan != nullptr && !r.write_token_plan) {
    return check.fail("output.token_plan is given without write_token_plan");
  }
  if (misaligned(r.output.token_plan)) return check.fail("output.token_plan is not 8-byte aligned");
  if (r.write_token_plan && r.output.sparse_indices != nullptr && r.output.token_plan == nullptr &&
      r.num_tokens > 0) {
    return check.fail("write_token_plan with caller-owned outputs needs output.token_plan (it is null)");
  }
  if (r.token_plan != nullptr && r.token_plan == r.output.token_plan) {
    return check.fail("token_plan and output.token_plan are the same memory (a build would read the plan it writes)");
  }
  return true;
}

bool request_shape_ok(Checks& check, const BuildRequest& r) {
  if (!(at_least(check, "window", r.window, 1) && at_least(check, "ratio", r.ratio, 1) &&
        at_least(check, "topk", r.topk, 0) && at_least(check, "num_requests R", r.num_requests, 0) &&
        at_least(check, "num_tokens T", r.num_tokens, 0) &&
        at_least(check, "num_decode_tokens D", r.num_decode_tokens, 0))) {
    return false;
  }
  if (r.num_decode_tokens > r.num_tokens) {
    return check.fail("num_decode_tokens D = ", r.num_decode_tokens,
                      " (the rows of decode_swa_indices) exceeds T = ", r.num_tokens);
  }
  const int32_t decode_width = r.decode_compressed.cols;
  if (!at_least(check, "decode_compressed columns Kd", decode_width, 0)) return false;
  const int64_t widest = r.topk > decode_width ? r.topk : decode_width;
  if (int64_t{r.window} + (widest + 3) / 4 * 4 > INT32_MAX) {
    return check.fail("topk = ", r.topk, " with decode width Kd = ", decode_width, " and window = ", r.window,
                      ": the output width W + P exceeds int32");
  }

  // As the reference: with no decode token the column count of decode_swa_indices is moot.
  if (!matrix_ok(check, "decode_swa_indices", r.decode_swa_indices, r.num_decode_tokens, "D",
                 r.num_decode_tokens > 0 ? r.window : r.decode_swa_indices.cols, "window")) {
    return false;
  }
  // Zero columns: absent, any row count.
  if (decode_width > 0 &&
      !matrix_ok(check, "decode_compressed", r.decode_compressed, r.num_decode_tokens, "D", decode_width, "Kd")) {
    return false;
  }
  if (r.decode_local && r.decode_compressed_lens != nullptr) {
    return check.fail("decode_compressed_lens is given with decode_local = true (lens belong to the global form)");
  }
  if (!r.decode_local && r.decode_valid != nullptr) {
    return check.fail("decode_valid is given with decode_local = false (validity belongs to the local form)");
  }
  // With run-time sizes prefill_topk is a buffer of any rows: T - D is checked against them
  // when the build runs.
  if (!(at_least(check, "prefill_topk columns Kp", r.prefill_topk.cols, 0) &&
        at_least(check, "prefill_topk rows", r.prefill_topk.rows, 0) &&
        matrix_ok(check, "prefill_topk", r.prefill_topk,
                  r.run_time_sizes != nullptr ? r.prefill_topk.rows : int64_t{r.num_tokens} - r.num_decode_tokens,
                  "T - D", r.prefill_topk.cols, "Kp") &&
        engine_fields_ok(check, r) && part_ok(check, r) && token_plan_ok(check, r))) {
    return false;
  }

  if (r.num_tokens > 0) {
    if (r.query_start_loc == nullptr) return check.fail("query_start_loc is null");
    if (r.seq_lens == nullptr) return check.fail("seq_lens is null");
    if (r.token_to_req == nullptr) return check.fail("token_to_req is null");
  }
  if (!cache_ok(check, "swa", r.swa, r.num_requests)) return false;
  // No table and no block size: compressed lookups use the SWA cache (SPEC §2).
  const bool has_compressed = r.compressed.block_table != nullptr || r.compressed.block_size != 0;
  return !has_compressed || cache_ok(check, "compressed", r.compressed, r.num_requests);
}

// Whether every token t in [qsl[q], qsl[q + 1]) has token_to_req[t] == q (and so in range),
// given 0 = qsl[0] <= ... <= qsl[R] = T; without a branch on the tokens' values. Long ranges
// (prefills): each range's tokens in one loop, which the compiler vectorizes (token by token
// with early exits, an 8,192-token prefill step's check took 6.7 us on this project's 2-core
// host, 1.0 us this way: kernel_bench cpu/step_check/prefill8K). Short ones (a decode batch,
// a token a request): one loop over the tokens that follows the request index, since a
// vectorized loop per one-token range is mostly its own set-up (about 30 instructions a
// request against 13).
constexpr int32_t kLongRangeTokens = 4;  // tokens a request on average
bool tokens_in_their_requests(const int32_t* qsl, const int32_t* token_to_req, int32_t num_requests,
                              int32_t num_tokens) {
  int32_t mismatch = 0;
  if (num_tokens >= int64_t{kLongRangeTokens} * num_requests) {
    for (int32_t q = 0; q < num_requests; ++q) {
      for (int32_t t = qsl[q]; t < qsl[q + 1]; ++t) mismatch |= token_to_req[t] ^ q;
    }
    return mismatch == 0;
  }
  for (int32_t t = 0, q = 0; t < num_tokens; ++t) {
    while (qsl[q + 1] <= t) ++q;  // the request whose range holds t (qsl[R] = T stops it)
    mismatch |= token_to_req[t] ^ q;
  }
  return mismatch == 0;
}

// The positions the SWA block table holds per request: the bound of every seq_lens entry.
int64_t swa_capacity(const BuildRequest& r) { return int64_t{r.swa.blocks_per_row} * r.swa.block_size; }

// Whether the host copies pass every check step_structure_ok makes of them: one sweep over the
// requests that accumulates every request check without a branch (it vectorizes), then the
// token check. A decode batch has as many requests as tokens, and Python's build() pays this
// check on every call: made one check after another, each a loop with an early exit, it took
// 13,300 instructions (0.57 us on this project's 2-core host) for 256 decodes, 6,200 this way
// (kernel_bench cpu/step_check/decode256_ctx8K under callgrind). Only a failing step then runs
// the checks in order, to name its first failure.
bool host_structure_passes(const BuildRequest& r, const StepStructureHost& host) {
  const int32_t* qsl = host.query_start_loc;
  const int32_t* seq_lens = host.seq_lens;
  const int32_t num_requests = r.num_requests;
  if (qsl[0] != 0 || qsl[num_requests] != r.num_tokens) return false;
  // In 32 bits, so that the sweep vectorizes: a seq_len above INT32_MAX cannot exist, and a
  // query length is exact wherever qsl does not decrease (where it does, the step fails anyway).
  const int64_t capacity = swa_capacity(r);
  const int32_t seq_len_max = capacity < INT32_MAX ? static_cast<int32_t>(capacity) : INT32_MAX;
  const int32_t decode_end = r.num_decode_tokens;
  int32_t broken = 0;
  int32_t boundary = decode_end == 0 ? 1 : 0;  // qsl[0] = 0
  for (int32_t q = 0; q < num_requests; ++q) {
    const int32_t begin = qsl[q], end = qsl[q + 1], seq_len = seq_lens[q];
    const auto query_length = static_cast<int32_t>(static_cast<uint32_t>(end) - static_cast<uint32_t>(begin));
    broken |= (end < begin) | (seq_len < query_length) | (seq_len > seq_len_max);
    boundary |= end == decode_end;
  }
  // Only now 0 = qsl[0] <= ... <= qsl[R] = T: the token check reads tokens [0, T).
  return broken == 0 && boundary != 0 && tokens_in_their_requests(qsl, host.token_to_req, num_requests, r.num_tokens);
}

bool step_structure_ok(Checks& check, const BuildRequest& r, const StepStructureHost& host) {
  if (!request_shape_ok(check, r)) return false;
  const int32_t num_requests = r.num_requests;
  const int32_t num_tokens = r.num_tokens;
  if (host.query_start_loc == nullptr) return check.fail("host.query_start_loc is null");
  if (num_requests > 0 && host.seq_lens == nullptr) return check.fail("host.seq_lens is null");
  if (num_tokens > 0 && host.token_to_req == nullptr) return check.fail("host.token_to_req is null");
  if (host_structure_passes(r, host)) return true;
  const int32_t* qsl = host.query_start_loc;

  if (qsl[0] != 0) return check.fail("query_start_loc[0] = ", qsl[0], " must be 0");
  for (int32_t q = 1; q <= num_requests; ++q) {
    if (qsl[q] < qsl[q - 1]) {
      return check.fail("query_start_loc[", q, "] = ", qsl[q], " is below query_start_loc[", q - 1, "] = ",
                        qsl[q - 1], " (must not decrease)");
    }
  }
  if (qsl[num_requests] != num_tokens) {
    return check.fail("query_start_loc[", num_requests, "] = ", qsl[num_requests], " must equal T = ", num_tokens);
  }
  // Now 0 = qsl[0] <= ... <= qsl[R] = T: every token belongs to exactly one range. The first
  // token (in token order) that breaks that is named.
  for (int32_t q = 0; q < num_requests; ++q) {
    for (int32_t t = qsl[q]; t < qsl[q + 1]; ++t) {
      const int32_t owner = host.token_to_req[t];
      if (owner < 0 || owner >= num_requests) {
        return check.fail("token_to_req[", t, "] = ", owner, " is out of range [0, R = ", num_requests, ")");
      }
      if (owner != q) {
        return check.fail("token_to_req[", t, "] = ", owner, " disagrees with query_start_loc: token ", t,
                          " lies in request ", q, "'s range [", qsl[q], ", ", qsl[q + 1], ")");
      }
    }
  }
  const int64_t capacity = swa_capacity(r);
  for (int32_t q = 0; q < num_requests; ++q) {
    const int32_t query_length = qsl[q + 1] - qsl[q];
    const int32_t seq_len = host.seq_lens[q];
    if (seq_len < query_length) {
      return check.fail("seq_lens[", q, "] = ", seq_len, " is below its query length ", query_length);
    }
    if (seq_len > capacity) {
      return check.fail("seq_lens[", q, "] = ", seq_len, " exceeds the SWA block table's capacity ", capacity,
                        " (swa.blocks_per_row ", r.swa.blocks_per_row, " x swa.block_size ", r.swa.block_size, ")");
    }
  }
  for (int32_t q = 0; q <= num_requests; ++q) {
    if (qsl[q] == r.num_decode_tokens) return true;
  }
  return check.fail("num_decode_tokens D = ", r.num_decode_tokens,
                    " (the rows of decode_swa_indices) is not a request boundary of query_start_loc");
}

}  // namespace

std::string request_shape_error(const BuildRequest& request) {
  Checks check;
  return request_shape_ok(check, request) ? std::string() : std::move(check.message);
}

std::string step_structure_error(const BuildRequest& request, const StepStructureHost& host) {
  Checks check;
  return step_structure_ok(check, request, host) ? std::string() : std::move(check.message);
}

void validate_request_shape(const BuildRequest& request) {
  Checks check;
  if (!request_shape_ok(check, request)) throw std::invalid_argument(check.message);
}

void validate_step_structure(const BuildRequest& request, const StepStructureHost& host) {
  Checks check;
  if (!step_structure_ok(check, request, host)) throw std::invalid_argument(check.message);
}

}  // namespace dsv4::opt
