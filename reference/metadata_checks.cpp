// SPEC §7 device-side validation in the reference: the checks of SPEC §4 over run-time sizes,
// each failure a (check, row, value), and the per-row rule of which rows are built.
#include "reference/metadata_checks.h"

#include <algorithm>

namespace dsv4::ref {

const char* metadata_check_field(MetadataCheck check) {
  switch (check) {
    case MetadataCheck::kNone: return "none";
    case MetadataCheck::kNumRequests: return "num_requests";
    case MetadataCheck::kNumTokens: return "num_tokens";
    case MetadataCheck::kNumDecodeTokens: return "num_decode_tokens";
    case MetadataCheck::kPrefillRows: return "prefill_topk rows";
    case MetadataCheck::kQueryStartFirst:
    case MetadataCheck::kQueryStartDecreasing:
    case MetadataCheck::kQueryStartEnd: return "query_start_loc";
    case MetadataCheck::kTokenRequestRange:
    case MetadataCheck::kTokenRequestMismatch: return "token_to_req";
    case MetadataCheck::kSeqLenBelowQuery:
    case MetadataCheck::kSeqLenAboveCapacity: return "seq_lens";
    case MetadataCheck::kDecodeBoundary: return "num_decode_tokens";
    case MetadataCheck::kDecodeCompressedLens: return "decode_compressed_lens";
  }
  return "unknown";
}

std::string describe(const MetadataStatus& status) {
  if (status.check == MetadataCheck::kNone) return "ok";
  return std::string(metadata_check_field(status.check)) + "[" + std::to_string(status.row) +
         "] = " + std::to_string(status.value) + " (check " +
         std::to_string(static_cast<int32_t>(status.check)) + ", " + std::to_string(status.failures) +
         " failures)";
}

namespace {

// Records one failure; the first is the smallest (check, row).
void fail(MetadataStatus& status, MetadataCheck check, int32_t row, int32_t value) {
  ++status.failures;
  const auto key = [](MetadataCheck c, int32_t r) { return std::make_pair(static_cast<int32_t>(c), r); };
  if (status.check == MetadataCheck::kNone || key(check, row) < key(status.check, status.row)) {
    status.check = check;
    status.row = row;
    status.value = value;
  }
}

bool sizes_valid(const BuilderInputs& in, const RunTimeSizes& s, MetadataStatus* status) {
  MetadataStatus local;
  MetadataStatus& st = status != nullptr ? *status : local;
  const int64_t failures_before = st.failures;
  const auto R_cap = static_cast<int32_t>(in.seq_lens.size());
  const auto T_cap = static_cast<int32_t>(in.token_to_req.size());
  const auto D_cap = static_cast<int32_t>(in.decode_swa_indices.rows());
  if (s.num_requests < 0 || s.num_requests > R_cap) fail(st, MetadataCheck::kNumRequests, 0, s.num_requests);
  if (s.num_tokens < 0 || s.num_tokens > T_cap) fail(st, MetadataCheck::kNumTokens, 0, s.num_tokens);
  if (s.num_decode_tokens < 0 || s.num_decode_tokens > std::min(s.num_tokens, D_cap)) {
    fail(st, MetadataCheck::kNumDecodeTokens, 0, s.num_decode_tokens);
  } else if (int64_t{s.num_tokens} - s.num_decode_tokens > in.prefill_topk.rows()) {
    fail(st, MetadataCheck::kPrefillRows, 0, s.num_tokens - s.num_decode_tokens);
  }
  return st.failures == failures_before;
}

}  // namespace

MetadataStatus check_metadata(const BuilderInputs& in, const RunTimeSizes& s) {
  MetadataStatus st;
  if (!sizes_valid(in, s, &st)) return st;
  const int32_t R = s.num_requests, T = s.num_tokens, D = s.num_decode_tokens;
  const IndexVector& qsl = in.query_start_loc;
  if (qsl(0) != 0) fail(st, MetadataCheck::kQueryStartFirst, 0, qsl(0));
  for (int32_t r = 1; r <= R; ++r) {
    if (qsl(r) < qsl(r - 1)) fail(st, MetadataCheck::kQueryStartDecreasing, r, qsl(r));
  }
  if (qsl(R) != T) fail(st, MetadataCheck::kQueryStartEnd, R, qsl(R));
  for (int32_t t = 0; t < T; ++t) {
    const int32_t r = in.token_to_req(t);
    if (r < 0 || r >= R) {
      fail(st, MetadataCheck::kTokenRequestRange, t, r);
    } else if (t < qsl(r) || t >= qsl(r + 1)) {
      fail(st, MetadataCheck::kTokenRequestMismatch, t, r);
    }
  }
  for (int32_t r = 0; r < R; ++r) {
    const int64_t query_length = int64_t{qsl(r + 1)} - qsl(r);
    if (in.seq_lens(r) < query_length) fail(st, MetadataCheck::kSeqLenBelowQuery, r, in.seq_lens(r));
    if (in.seq_lens(r) > in.swa.row_capacity()) fail(st, MetadataCheck::kSeqLenAboveCapacity, r, in.seq_lens(r));
    if (qsl(r) < D && D < qsl(r + 1)) fail(st, MetadataCheck::kDecodeBoundary, r, D);
  }
  if (in.decode_compressed_lens) {
    const auto Kd = static_cast<int32_t>(in.decode_compressed.cols());
    for (int32_t t = 0; t < D; ++t) {
      const int32_t len = (*in.decode_compressed_lens)(t);
      if (len < 0 || len > Kd) fail(st, MetadataCheck::kDecodeCompressedLens, t, len);
    }
  }
  return st;
}

bool row_metadata_valid(const BuilderInputs& in, const RunTimeSizes& s, int32_t t) {
  const int32_t r = in.token_to_req(t);
  if (r < 0 || r >= s.num_requests) return false;
  const int32_t begin = in.query_start_loc(r), end = in.query_start_loc(r + 1);
  if (t < begin || t >= end || begin < 0 || end > s.num_tokens) return false;
  if (in.seq_lens(r) < end - begin || in.seq_lens(r) > in.swa.row_capacity()) return false;
  if (begin < s.num_decode_tokens && s.num_decode_tokens < end) return false;
  if (t < s.num_decode_tokens && in.decode_compressed_lens) {
    const int32_t len = (*in.decode_compressed_lens)(t);
    if (len < 0 || len > in.decode_compressed.cols()) return false;
  }
  return true;
}

CheckedBuild build_mixed_sparse_indices(const BuilderInputs& in, const RunTimeSizes& s) {
  validate_builder_shapes(in, true);
  CheckedBuild build;
  build.status = check_metadata(in, s);
  const auto T_cap = static_cast<int32_t>(in.token_to_req.size());
  const bool sizes_ok = sizes_valid(in, s, nullptr);
  build.output = build_rows(in, T_cap, sizes_ok ? s.num_tokens : 0, sizes_ok ? s.num_decode_tokens : 0,
                            [&](int32_t t) { return row_metadata_valid(in, s, t); });
  return build;
}

}  // namespace dsv4::ref
