// Tuning knobs of the mixed-sparse-indices kernels in one place (CUB-style policy), and the
// host-side choice of row mapping and grid size derived from them.
#pragma once
#include <cstdint>

namespace dsv4::opt {

struct MixedSparseIndicesPolicy {
  static constexpr int32_t kCtaThreads = 256;
  static constexpr int32_t kWarpThreads = 32;
  static constexpr int32_t kHalfWarpThreads = 16;
  // A row of at most this many 16-byte chunks (256 columns: SWA-only, short-context C128A)
  // gets half a warp: twice the rows in flight, since such rows are bound by the latency of
  // their dependent loads (token_to_req -> request metadata -> block table), not by bytes.
  static constexpr int32_t kMaxHalfWarpRowChunks = 64;
  // A row of more 16-byte chunks than this (2048 columns) gets a whole CTA: a warp would loop
  // over it more than 16 times (C128A rows reach 128 + 8192 columns at 1M context).
  static constexpr int32_t kMaxWarpRowChunks = 512;
  // A step of at most this many rows per SM gets a CTA per row as well, so that a small decode
  // step spreads over many SMs instead of queueing its rows on a few warps.
  static constexpr int32_t kCtaPerRowMaxRowsPerSm = 2;
  // Grid cap for the grid-stride loop over rows: at most this many CTAs per SM, and never more
  // than the occupancy calculator says are resident (one wave; larger steps loop).
  static constexpr int32_t kMaxCtasPerSm = 8;
  // Compressed 16-byte chunks a thread loads (then translates, then stores) at once, the first
  // batch before the row's plan is finished: independent reads in flight. 4 keeps every
  // variant at 64 registers (4 CTAs per SM); 8 took the copy-form variants to 124.
  static constexpr int kCompressedBatch = 4;
};

enum class RowMapping : uint8_t {
  kHalfWarpPerRow,  // 16 lanes own a row; kCtaThreads / 16 rows per CTA
  kWarpPerRow,      // a warp owns a row; kCtaThreads / 32 rows per CTA
  kCtaPerRow,       // a CTA owns a row
};
constexpr int kRowMappings = 3;

constexpr int32_t group_threads(RowMapping mapping) {
  using P = MixedSparseIndicesPolicy;
  return mapping == RowMapping::kHalfWarpPerRow ? P::kHalfWarpThreads
         : mapping == RowMapping::kWarpPerRow   ? P::kWarpThreads
                                                : P::kCtaThreads;
}

// row_chunks: 16-byte chunks per row (vector path) or columns per row (scalar path).
constexpr RowMapping choose_row_mapping(int32_t num_tokens, int32_t row_chunks, int32_t sm_count) {
  using P = MixedSparseIndicesPolicy;
  if (row_chunks > P::kMaxWarpRowChunks) return RowMapping::kCtaPerRow;
  if (static_cast<int64_t>(num_tokens) <= static_cast<int64_t>(sm_count) * P::kCtaPerRowMaxRowsPerSm) {
    return RowMapping::kCtaPerRow;
  }
  return row_chunks <= P::kMaxHalfWarpRowChunks ? RowMapping::kHalfWarpPerRow : RowMapping::kWarpPerRow;
}

// CTAs to launch for num_tokens >= 1 rows: one per row group, capped at one wave of
// resident_ctas_per_sm (itself capped at kMaxCtasPerSm) on every SM.
constexpr int32_t grid_ctas(RowMapping mapping, int32_t num_tokens, int32_t sm_count,
                            int32_t resident_ctas_per_sm = MixedSparseIndicesPolicy::kMaxCtasPerSm) {
  using P = MixedSparseIndicesPolicy;
  const int32_t rows_per_cta = P::kCtaThreads / group_threads(mapping);
  const int64_t needed = (static_cast<int64_t>(num_tokens) + rows_per_cta - 1) / rows_per_cta;
  int32_t per_sm = resident_ctas_per_sm < P::kMaxCtasPerSm ? resident_ctas_per_sm : P::kMaxCtasPerSm;
  if (per_sm < 1) per_sm = 1;
  const int64_t cap = static_cast<int64_t>(sm_count < 1 ? 1 : sm_count) * per_sm;
  return static_cast<int32_t>(needed < cap ? needed : cap);
}

}  // namespace dsv4::opt
