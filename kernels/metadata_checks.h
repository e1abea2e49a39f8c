// SPEC §7 device-side validation, written once for the host backend and the CUDA kernels:
// the SPEC §4 structural checks over run-time sizes, each failure a (check, row, value)
// (numbering: step_sizes.h), and the per-row rule the builds use to skip a row whose
// metadata breaks them. Every read stays inside the buffers' capacities (the sizes are
// checked against them first).
#pragma once
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/step_sizes.h"

namespace dsv4::kernels {

// One thread's failures: its smallest (check, row) with the value, and how many.
struct FailureTally {
  uint64_t first_key = ~uint64_t{0};
  int32_t first_value = 0;
  uint32_t failures = 0;

  DSV4_HD static uint64_t key(MetadataCheck check, int32_t row) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(check)) << 32) | static_cast<uint32_t>(row);
  }
  DSV4_HD void fail(MetadataCheck check, int32_t row, int32_t value) {
    ++failures;
    const uint64_t k = key(check, row);
    if (k < first_key) {
      first_key = k;
      first_value = value;
    }
  }
};

// The status of a tally that holds every failure (all threads' merged).
DSV4_HD DSV4_INLINE MetadataStatus status_of(uint64_t first_key, int32_t first_value, uint32_t failures) {
  if (failures == 0) return MetadataStatus{0, 0, 0, 0, 0, 0};
  const auto check = static_cast<MetadataCheck>(first_key >> 32);
  return MetadataStatus{static_cast<int32_t>(check), static_cast<int32_t>(metadata_field(check)),
                        static_cast<int32_t>(first_key & 0xffffffffu), first_value, failures, 0};
}

// Checks 1-4: the sizes against the capacities in `a` (num_requests = R_cap, num_tokens = T_cap,
// num_decode_tokens = D_cap, prefill_rows). Nothing else may be read when they fail.
DSV4_HD DSV4_INLINE bool sizes_fit(const MixedSparseIndicesArgs& a, const StepSizes& s, FailureTally* tally) {
  bool fit = true;
  if (s.num_requests < 0 || s.num_requests > a.num_requests) {
    tally->fail(MetadataCheck::kNumRequests, 0, s.num_requests);
    fit = false;
  }
  if (s.num_tokens < 0 || s.num_tokens > a.num_tokens) {
    tally->fail(MetadataCheck::kNumTokens, 0, s.num_tokens);
    fit = false;
  }
  const int32_t max_decode = s.num_tokens < a.num_decode_tokens ? s.num_tokens : a.num_decode_tokens;
  if (s.num_decode_tokens < 0 || s.num_decode_tokens > max_decode) {
    tally->fail(MetadataCheck::kNumDecodeTokens, 0, s.num_decode_tokens);
    fit = false;
  } else if (int64_t{s.num_tokens} - s.num_decode_tokens > a.prefill_rows) {
    tally->fail(MetadataCheck::kPrefillRows, 0, s.num_tokens - s.num_decode_tokens);
    fit = false;
  }
  return fit;
}

DSV4_HD DSV4_INLINE int64_t swa_capacity(const MixedSparseIndicesArgs& a) {
  return int64_t{a.swa.blocks_per_row} * a.swa.block_size;
}

// The checks of entry r in [0, R] of query_start_loc and, for r < R, of request r (5-7, 10-12).
// `a` holds the step's sizes (after sizes_fit passed).
DSV4_HD DSV4_INLINE void check_request(const MixedSparseIndicesArgs& a, int32_t r, FailureTally* tally) {
  const int32_t begin = load_input(a.query_start_loc + r);
  if (r == 0 && begin != 0) tally->fail(MetadataCheck::kQueryStartFirst, 0, begin);
  if (r > 0 && begin < load_input(a.query_start_loc + r - 1)) tally->fail(MetadataCheck::kQueryStartDecreasing, r, begin);
  if (r == a.num_requests) {
    if (begin != a.num_tokens) tally->fail(MetadataCheck::kQueryStartEnd, r, begin);
    return;
  }
  const int32_t end = load_input(a.query_start_loc + r + 1);
  const int32_t seq_len = load_input(a.seq_lens + r);
  if (seq_len < int64_t{end} - begin) tally->fail(MetadataCheck::kSeqLenBelowQuery, r, seq_len);
  if (seq_len > swa_capacity(a)) tally->fail(MetadataCheck::kSeqLenAboveCapacity, r, seq_len);
  const int32_t D = a.num_decode_tokens;
  if (begin < D && D < end) tally->fail(MetadataCheck::kDecodeBoundary, r, D);
}

// The checks of token t < T (8, 9, 13).
DSV4_HD DSV4_INLINE void check_token(const MixedSparseIndicesArgs& a, int32_t t, FailureTally* tally) {
  const int32_t r = load_input(a.token_to_req + t);
  if (static_cast<uint32_t>(r) >= static_cast<uint32_t>(a.num_requests)) {
    tally->fail(MetadataCheck::kTokenRequestRange, t, r);
  } else if (t < load_input(a.query_start_loc + r) || t >= load_input(a.query_start_loc + r + 1)) {
    tally->fail(MetadataCheck::kTokenRequestMismatch, t, r);
  }
  if (t < a.num_decode_tokens && !a.decode_local && a.decode_compressed_lens != nullptr) {
    const int32_t len = load_input(a.decode_compressed_lens + t);
    if (len < 0 || len > a.decode_width) tally->fail(MetadataCheck::kDecodeCompressedLens, t, len);
  }
}

// Replaces the capacities in `a` by the step's run-time sizes when they fit (else by an empty
// step: every row padding) and says whether they did.
DSV4_HD DSV4_INLINE bool resolve_run_time_sizes(MixedSparseIndicesArgs& a) {
  const StepSizes s{load_input(&a.run_time_sizes->num_tokens), load_input(&a.run_time_sizes->num_decode_tokens),
                    load_input(&a.run_time_sizes->num_requests)};
  FailureTally ignored;
  const bool fit = sizes_fit(a, s, &ignored);
  a.num_tokens = fit ? s.num_tokens : 0;
  a.num_decode_tokens = fit ? s.num_decode_tokens : 0;
  a.num_requests = fit ? s.num_requests : 0;
  a.token_plan_in = nullptr;  // host-sized builds only (a plan's rows are the step's T)
  a.token_plan_out = nullptr;
  return fit;
}

// Whether row t < T (token_to_req[t] = r, loaded) is built, given its request's query range
// [begin, end) and seq_len: r in [0, R), t in the range, the range within [0, T], the seq_len
// within [query length, SWA capacity], r not straddling D and a global decode row's lens in
// [0, Kd] (`decode_length_input`, loaded by start_row).
DSV4_HD DSV4_INLINE bool row_metadata_valid(const MixedSparseIndicesArgs& a, int32_t t, bool decode,
                                            int32_t begin, int32_t end, int32_t seq_len,
                                            int32_t decode_length_input) {
  const int32_t D = a.num_decode_tokens;
  bool valid = begin <= t && t < end && begin >= 0 && end <= a.num_tokens && seq_len >= end - begin &&
               seq_len <= swa_capacity(a) && !(begin < D && D < end);
  if (decode && !a.decode_local && a.decode_compressed_lens != nullptr) {
    valid = valid && decode_length_input >= 0 && decode_length_input <= a.decode_width;
  }
  return valid;
}

// Every check by one thread (the host backend; the CUDA kernel spreads the same checks over a
// CTA). `a` holds the capacities and run_time_sizes.
inline MetadataStatus check_metadata_serially(const MixedSparseIndicesArgs& a) {
  const StepSizes* s = a.run_time_sizes;
  FailureTally tally;
  if (sizes_fit(a, *s, &tally)) {
    MixedSparseIndicesArgs step = a;
    step.num_tokens = s->num_tokens;
    step.num_decode_tokens = s->num_decode_tokens;
    step.num_requests = s->num_requests;
    for (int32_t r = 0; r <= step.num_requests; ++r) check_request(step, r, &tally);
    for (int32_t t = 0; t < step.num_tokens; ++t) check_token(step, t, &tally);
  }
  return status_of(tally.first_key, tally.first_value, tally.failures);
}

}  // namespace dsv4::kernels
