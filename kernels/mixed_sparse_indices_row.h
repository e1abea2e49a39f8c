// The per-row logic of build_mixed_sparse_indices (SPEC §3), written once for the host
// backend and the CUDA kernels. A row (one token) is split into columns that the threads of
// a group own round-robin: thread `rank` of `group_threads` owns 4-column chunks (or single
// columns) rank, rank + group_threads, ... The host backend runs a row as a group of one.
//
// Memory: every read stays inside the inputs (rows t < D of the decode tensors, row t - D of
// prefill_topk, columns below their widths, row r < R of a block table, block < its width)
// and every write inside row t of the outputs, for any input values once the shapes passed
// validation (a token_to_req entry out of range is caught per row, not trusted).
#pragma once
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_args.h"

namespace dsv4::opt {

// What every column of one token's row shares, resolved once per row.
struct RowPlan {
  int32_t token;
  int32_t request;
  bool decode;
  bool request_in_range;         // false only for a step that skipped validation
  const int32_t* window_in;      // decode: the token's decode_swa_indices row
  const int32_t* compressed_in;  // decode: decode_compressed row; prefill: prefill_topk row
  int32_t compressed_width;      // columns of compressed_in (Kd or Kp): what may be read
  int32_t compressed_count;      // leading columns of compressed_in that hold values
  int32_t swa_start;             // prefill: position of window column 0
  int32_t swa_len;               // prefill
  int32_t topk_len;              // prefill
  const int32_t* swa_table;      // the request's SWA block-table row (request in range)
  const int32_t* compressed_table;  // the request's compressed block-table row
  int32_t* out;                  // the token's output row
};

DSV4_HD DSV4_INLINE int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

// The part of a row's plan that needs only t. token_to_req[t] is loaded but not used yet,
// so loads issued before finish_row() overlap its latency.
DSV4_HD DSV4_INLINE RowPlan begin_row(const MixedSparseIndicesArgs& a, int32_t t) {
  RowPlan row{};
  row.token = t;
  row.out = a.sparse_indices + static_cast<int64_t>(t) * a.row_width;
  row.request = load_input(a.token_to_req + t);
  row.decode = t < a.num_decode_tokens;
  if (row.decode) {
    row.window_in = a.decode_swa_indices + static_cast<int64_t>(t) * a.decode_swa_stride;
    row.compressed_in = a.decode_width > 0
                            ? a.decode_compressed + static_cast<int64_t>(t) * a.decode_compressed_stride
                            : nullptr;
    row.compressed_width = a.decode_width;
  } else {
    row.compressed_in =
        a.prefill_width > 0
            ? a.prefill_topk + static_cast<int64_t>(t - a.num_decode_tokens) * a.prefill_topk_stride
            : nullptr;
    row.compressed_width = a.prefill_width;
  }
  return row;
}

// The rest of the plan: the request's metadata and, for a prefill token, its position.
DSV4_HD DSV4_INLINE void finish_row(const MixedSparseIndicesArgs& a, RowPlan& row) {
  row.request_in_range = static_cast<uint32_t>(row.request) < static_cast<uint32_t>(a.num_requests);
  if (row.request_in_range) {
    row.swa_table = a.swa.row(row.request);
    row.compressed_table = a.compressed.row(row.request);
  }
  if (row.decode) {
    row.compressed_count = a.decode_width;
    return;
  }
  if (!row.request_in_range) return;
  // pos(t) = seq_lens[r] - query length + offset in the request (SPEC §2).
  const int32_t begin = load_input(a.query_start_loc + row.request);
  const int32_t end = load_input(a.query_start_loc + row.request + 1);
  const int32_t position = load_input(a.seq_lens + row.request) - (end - begin) + (row.token - begin);
  row.swa_len = min_i32(position + 1, a.window);
  row.swa_start = position - row.swa_len + 1;
  row.topk_len = min_i32((position + 1) / a.ratio, a.topk);
  row.compressed_count = min_i32(row.topk_len, a.prefill_width);
}

DSV4_HD DSV4_INLINE RowPlan plan_row(const MixedSparseIndicesArgs& a, int32_t t) {
  RowPlan row = begin_row(a, t);
  finish_row(a, row);
  return row;
}

// 4 x int32: one 16-byte access.
struct Int32x4 {
  int32_t v[4];
};

DSV4_HD DSV4_INLINE Int32x4 load_input4(const int32_t* p) {  // p 16-byte aligned
#if defined(__CUDA_ARCH__)
  const int4 q = __ldg(reinterpret_cast<const int4*>(p));
  return Int32x4{{q.x, q.y, q.z, q.w}};
#else
  return Int32x4{{p[0], p[1], p[2], p[3]}};
#endif
}

template <int kLanes>
DSV4_HD DSV4_INLINE void store_output(int32_t* p, const int32_t (&v)[kLanes]) {
#if defined(__CUDA_ARCH__)
  if constexpr (kLanes == 4) {
    *reinterpret_cast<int4*>(p) = make_int4(v[0], v[1], v[2], v[3]);  // p 16-byte aligned
  } else {
    p[0] = v[0];
  }
#else
  for (int e = 0; e < kLanes; ++e) p[e] = v[e];
#endif
}

// Loads kLanes consecutive input columns; 16 bytes at once when `aligned`.
template <int kLanes>
DSV4_HD DSV4_INLINE void load_chunk(const int32_t* p, bool aligned, int32_t (&v)[kLanes]) {
  if constexpr (kLanes == 4) {
    if (aligned) {
      const Int32x4 q = load_input4(p);
      v[0] = q.v[0];
      v[1] = q.v[1];
      v[2] = q.v[2];
      v[3] = q.v[3];
      return;
    }
  }
  DSV4_UNROLL
  for (int e = 0; e < kLanes; ++e) v[e] = load_input(p + e);
}

// The first compressed chunk that thread `rank` of a group owns (the window's chunks come
// first: chunk k is compressed when k >= window_chunks).
DSV4_HD DSV4_INLINE int32_t first_compressed_chunk(int32_t window_chunks, int32_t rank,
                                                   int32_t group_threads) {
  if (rank >= window_chunks) return rank;
  return rank + (window_chunks - rank + group_threads - 1) / group_threads * group_threads;
}

// Loads, untranslated, the thread's kBatch compressed chunks k, k + group_threads, ... of the
// row: input columns j < compressed_width (what the input holds, known from t alone, so this
// can run before the row's plan is finished), -1 elsewhere. Needs begin_row() only.
template <int kLanes, int kBatch>
DSV4_HD DSV4_INLINE void load_compressed_batch(const MixedSparseIndicesArgs& a, const RowPlan& row,
                                               int32_t k, int32_t group_threads,
                                               int32_t (&v)[kBatch][kLanes]) {
  const bool vector_loads =
      row.decode ? a.decode_compressed_vector_loads : a.prefill_topk_vector_loads;
  DSV4_UNROLL
  for (int b = 0; b < kBatch; ++b) {
    const int32_t j0 = (k + b * group_threads) * kLanes - a.window;
    if (j0 + kLanes <= row.compressed_width) {
      load_chunk<kLanes>(row.compressed_in + j0, vector_loads, v[b]);
    } else {  // the input's tail, or past it (-1)
      DSV4_UNROLL
      for (int e = 0; e < kLanes; ++e) {
        v[b][e] = j0 + e < row.compressed_width ? load_input(row.compressed_in + j0 + e) : -1;
      }
    }
  }
}

// The columns of `row` that thread `rank` of a group of `group_threads` owns.
// kDecode: a decode row (else prefill). kDecodeLocal: decode compressed indices are local (C4A)
// and get translated; else they are global slots, copied. kVec4: 4-column chunks with 16-byte
// stores (W % 4 == 0), else single columns. kBatch: compressed chunks per thread in flight;
// `v` holds the thread's first batch, loaded by load_compressed_batch before the plan was
// finished. Returns, for a local-form decode row, how many of the owned decode_compressed
// values are >= 0 (the group sums them into the row's length).
template <bool kDecode, bool kDecodeLocal, bool kVec4, int kBatch>
DSV4_HD DSV4_INLINE int32_t build_row_part(const MixedSparseIndicesArgs& a, const RowPlan& row,
                                           int32_t rank, int32_t group_threads,
                                           int32_t (&v)[kBatch][kVec4 ? 4 : 1], int32_t* errors) {
  constexpr int32_t kLanes = kVec4 ? 4 : 1;
  const int32_t window_chunks = a.window / kLanes;
  const int32_t chunks = a.row_width / kLanes;
  int32_t picks = 0;
  // Window columns c < W: decode copies its SWA row; prefill looks up positions start + c.
  for (int32_t k = rank; k < window_chunks; k += group_threads) {
    const int32_t c0 = k * kLanes;
    int32_t w[kLanes];
    if constexpr (kDecode) {
      load_chunk<kLanes>(row.window_in + c0, a.decode_swa_vector_loads, w);
    } else {
      DSV4_UNROLL
      for (int e = 0; e < kLanes; ++e) {
        const int32_t c = c0 + e;
        w[e] = c < row.swa_len ? a.swa.slot_in_row(row.swa_table, row.swa_start + c, errors) : -1;
      }
    }
    store_output<kLanes>(row.out + c0, w);
  }
  // Compressed columns W + j: v = input j (j < compressed_count) else -1; global decode slots
  // are written as-is, local indices v >= 0 are translated through the compressed table.
  // kBatch chunks per thread at a time: all their loads, then all their table lookups, then
  // all their stores, so that kBatch x kLanes independent reads are in flight (the lookups
  // depend on the loaded values; one chunk at a time would serialize two memory latencies).
  const int32_t k_first = first_compressed_chunk(window_chunks, rank, group_threads);
  for (int32_t k = k_first; k < chunks; k += group_threads * kBatch) {
    if (k != k_first) load_compressed_batch<kLanes, kBatch>(a, row, k, group_threads, v);
    DSV4_UNROLL
    for (int b = 0; b < kBatch; ++b) {
      const int32_t j0 = (k + b * group_threads) * kLanes - a.window;
      DSV4_UNROLL
      for (int e = 0; e < kLanes; ++e) {
        int32_t x = j0 + e < row.compressed_count ? v[b][e] : -1;  // past topk_len: -1
        if constexpr (!kDecode || kDecodeLocal) {
          if constexpr (kDecode) picks += x >= 0 ? 1 : 0;
          x = x >= 0 ? a.compressed.slot_in_row(row.compressed_table, x, errors) : -1;
        }
        v[b][e] = x;
      }
    }
    DSV4_UNROLL
    for (int b = 0; b < kBatch; ++b) {
      if (k + b * group_threads < chunks) {
        store_output<kLanes>(row.out + (k + b * group_threads) * kLanes, v[b]);
      }
    }
  }
  return picks;
}

// Thread `rank`'s share of row `row` (see build_row_part), any row kind.
template <bool kDecodeLocal, bool kVec4, int kBatch>
DSV4_HD DSV4_INLINE int32_t build_row_columns(const MixedSparseIndicesArgs& a, const RowPlan& row,
                                              int32_t rank, int32_t group_threads,
                                              int32_t (&v)[kBatch][kVec4 ? 4 : 1],
                                              int32_t* errors) {
  if (!row.request_in_range) {
    // Unreachable after validate_step_structure; keeps a drifted device copy memory-safe.
    for (int32_t c = rank; c < a.row_width; c += group_threads) row.out[c] = -1;
    if (rank == 0) ++*errors;
    return 0;
  }
  if (row.decode) {
    return build_row_part<true, kDecodeLocal, kVec4, kBatch>(a, row, rank, group_threads, v, errors);
  }
  return build_row_part<false, kDecodeLocal, kVec4, kBatch>(a, row, rank, group_threads, v, errors);
}

// Thread `rank`'s share of token t's row, in the order that keeps memory latencies overlapped:
// begin the plan (token_to_req load in flight), load the thread's first compressed batch (it
// needs t only), finish the plan (first use of the request), then build the columns.
struct RowShare {
  RowPlan row;
  int32_t picks;  // local-form decode row: the thread's decode_compressed values >= 0
};
template <bool kDecodeLocal, bool kVec4, int kBatch = 1>
DSV4_HD DSV4_INLINE RowShare build_row_share(const MixedSparseIndicesArgs& a, int32_t t,
                                             int32_t rank, int32_t group_threads,
                                             int32_t* errors) {
  constexpr int32_t kLanes = kVec4 ? 4 : 1;
  RowShare share{begin_row(a, t), 0};
  int32_t v[kBatch][kLanes];
  load_compressed_batch<kLanes, kBatch>(
      a, share.row, first_compressed_chunk(a.window / kLanes, rank, group_threads), group_threads, v);
  finish_row(a, share.row);
  share.picks = build_row_columns<kDecodeLocal, kVec4, kBatch>(a, share.row, rank, group_threads, v,
                                                               errors);
  return share;
}

// sparse_lens[t] (SPEC §3); `picks` = the row's decode_compressed values >= 0 (local form).
DSV4_HD DSV4_INLINE int32_t row_length(const MixedSparseIndicesArgs& a, const RowPlan& row,
                                       int32_t picks) {
  if (!row.request_in_range) return 0;
  if (!row.decode) return a.window + row.topk_len;
  if (a.decode_width == 0) return a.window;
  if (!a.decode_local) {
    return a.window + (a.decode_compressed_lens != nullptr
                           ? load_input(a.decode_compressed_lens + row.token)
                           : a.decode_width);
  }
  const bool valid = a.decode_valid == nullptr || a.decode_valid[row.token] != 0;
  return a.window + (valid ? picks : 0);
}

// A whole row by one thread (the host backend). Returns nothing; errors accumulate.
template <bool kDecodeLocal, bool kVec4>
DSV4_HD DSV4_INLINE void build_row(const MixedSparseIndicesArgs& a, int32_t t, int32_t* errors) {
  const RowShare share = build_row_share<kDecodeLocal, kVec4>(a, t, 0, 1, errors);
  a.sparse_lens[t] = row_length(a, share.row, share.picks);
}

}  // namespace dsv4::opt
