// build_mixed_sparse_indices, written to read like SPEC §3 (the decode and the prefill rule,
// column by column). Validation (SPEC §4) runs first; content errors become -1 and are counted.
#include "reference/mixed_sparse_indices.h"

#include <algorithm>

#include "reference/paged_cache.h"

namespace dsv4::ref {

// Formed in int64 so that topk near INT32_MAX cannot overflow; validation rejects a width
// that does not fit int32 before the builder calls this.
int32_t padded_compressed_width(int32_t topk, int32_t decode_width) {
  return static_cast<int32_t>((int64_t{std::max(topk, decode_width)} + 3) / 4 * 4);
}

int32_t output_width(const BuilderInputs& in) {
  const int32_t P = padded_compressed_width(in.topk, static_cast<int32_t>(in.decode_compressed.cols()));
  return in.window + in.compressed_capacity.value_or(P);
}

namespace {

// pos(t) of SPEC §2.
int32_t position(const BuilderInputs& in, int32_t t, int32_t r) {
  const int32_t query_length = in.query_start_loc(r + 1) - in.query_start_loc(r);
  return in.seq_lens(r) - query_length + (t - in.query_start_loc(r));
}

}  // namespace

BuilderOutput build_mixed_sparse_indices(const BuilderInputs& in) {
  validate_builder_inputs(in);
  const auto T = static_cast<int32_t>(in.token_to_req.size());
  const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
  return build_rows(in, in.row_capacity.value_or(T), T, D, [](int32_t) { return true; });
}

BuilderOutput build_rows(const BuilderInputs& in, int32_t rows, int32_t T, int32_t D,
                         const std::function<bool(int32_t)>& build_row) {
  const int32_t W = in.window;
  const auto Kd = static_cast<int32_t>(in.decode_compressed.cols());
  const auto Kp = static_cast<int32_t>(in.prefill_topk.cols());
  const int32_t P = output_width(in) - W;  // P_cap: columns past round_up(max(topk, Kd), 4) are -1
  const PagedCache& compressed_cache = in.compressed ? *in.compressed : in.swa;

  BuilderOutput out;
  out.sparse_indices = IndexMatrix::Constant(rows, W + P, -1);  // padding rows stay so
  out.sparse_lens = IndexVector::Zero(rows);
  // A lookup the cache cannot answer is a content error: -1, counted.
  auto lookup = [&out](const PagedCache& cache, int32_t r, int32_t i) {
    const int32_t slot = paged_slot(cache, r, i);
    if (slot < 0) ++out.content_errors;
    return slot;
  };

  for (int32_t t = 0; t < std::min(D, T); ++t) {
    if (!build_row(t)) continue;
    const int32_t r = in.token_to_req(t);
    for (int32_t c = 0; c < W; ++c) out.sparse_indices(t, c) = in.decode_swa_indices(t, c);
    int32_t picks = 0;  // local form: entries with v >= 0
    for (int32_t j = 0; j < P; ++j) {
      const int32_t v = j < Kd ? in.decode_compressed(t, j) : -1;
      if (!in.decode_local) {
        out.sparse_indices(t, W + j) = v;
      } else {
        out.sparse_indices(t, W + j) = v >= 0 ? lookup(compressed_cache, r, v) : -1;
        if (v >= 0) ++picks;
      }
    }
    int32_t compressed_length = 0;
    if (Kd == 0) {
      compressed_length = 0;
    } else if (!in.decode_local) {
      compressed_length = in.decode_compressed_lens ? (*in.decode_compressed_lens)(t) : Kd;
    } else {
      const bool valid = !in.decode_valid || (*in.decode_valid)[static_cast<size_t>(t)] != 0;
      compressed_length = valid ? picks : 0;
    }
    out.sparse_lens(t) = W + compressed_length;
  }

  for (int32_t t = D; t < T; ++t) {
    if (!build_row(t)) continue;
    const int32_t pi = t - D;
    const int32_t r = in.token_to_req(t);
    const int32_t p = position(in, t, r);
    const int32_t swa_len = std::min(p + 1, W);
    const int32_t start = p - swa_len + 1;
    for (int32_t c = 0; c < W; ++c) {
      out.sparse_indices(t, c) = c < swa_len ? lookup(in.swa, r, start + c) : -1;
    }
    const int32_t topk_len = std::min((p + 1) / in.ratio, in.topk);
    for (int32_t j = 0; j < P; ++j) {
      const int32_t v = j < topk_len && j < Kp ? in.prefill_topk(pi, j) : -1;
      out.sparse_indices(t, W + j) = v >= 0 ? lookup(compressed_cache, r, v) : -1;
    }
    out.sparse_lens(t) = W + topk_len;
  }
  return out;
}

}  // namespace dsv4::ref
