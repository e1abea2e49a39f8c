// The per-row logic of build_mixed_sparse_indices (SPEC §3), written once for the host
// backend and the CUDA kernels. A row (one token) is cut into chunks of kLanes columns (4 with
// 16-byte accesses, else 1); thread `rank` of a group of `group_threads` owns chunks rank,
// rank + group_threads, ... and handles them in passes of kChunks: all loads of a pass, then
// all their table lookups, then all their stores, so that independent reads are in flight
// together. The host backend runs a row as a group of one.
//
// A row in three steps, in the order that overlaps memory latencies:
//   start_row   what t alone gives (token_to_req[t], or a prefill row's token plan entry, is
//               loaded, not yet used; an unchecked row of a one-request step reads neither: its
//               request is 0), then the loads of the first pass's input columns, which need t
//               only;
//   plan_row    the request's metadata: position (from the plan when there is one: no further
//               read), window and top-k lengths, table rows;
//   finish_chunk / store_chunk per chunk, and row_length for sparse_lens[t].
//
// Memory: every read stays inside the inputs (rows t < D of the decode tensors, row t - D of
// prefill_topk, columns below their widths, row r < R of a block table, block < its width)
// and every write inside row t of the outputs, for any input values once the shapes passed
// validation (a token_to_req entry out of range is caught per row, not trusted; a one-request
// step's unchecked rows take request 0, in range).
// kChecked (SPEC §7 run-time sizes, resolved into `a` by resolve_run_time_sizes): a row whose
// metadata breaks the structural checks (row_metadata_valid) is written -1 with length 0,
// without a content error; padding rows [T, T_cap) read nothing (write_padding_row). Both have
// length 0 in every SPEC §8 part too (not 0 - W in the split form's compressed segment).
// SPEC §8 parts of a row (first_column, end_column, output_shift, length_offset of the args):
// only the chunks of the columns written are visited, so a window part reads no compressed
// input and counts no compressed content error, and a compressed part no window lookup.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/metadata_checks.h"
#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/mixed_sparse_indices_policy.h"

namespace dsv4::kernels {

// What t alone gives.
struct RowStart {
  int32_t token;
  int32_t request;               // token_to_req[t] as loaded; plan_row checks its range
  int32_t position;              // prefill with a.token_plan_in: the plan's position (else unset)
#if DSV4_ROW_METADATA >= 2
  // unchecked prefill without a token plan (early_metadata): the last request's
  // query_start_loc[R - 1], [R] and seq_lens[R - 1], loaded at the start (else unset)
  int32_t last_begin, last_end, last_seq_len;
#endif
  bool decode;
  const int32_t* window_in;      // decode: the token's decode_swa_indices row
  const int32_t* compressed_in;  // decode: decode_compressed row; prefill: prefill_topk row
  int32_t compressed_width;      // columns of compressed_in (Kd or Kp): what may be read
  // decode: decode_compressed_lens[t] (global form, given) or decode_valid[t] (local form,
  // given), loaded with the rest so that the length needs no further round trip; else 1.
  int32_t decode_length_input;
  int32_t* out;                  // the token's output row
};

// What every column of the row shares, from the request's metadata.
struct RowPlan {
  // false only for a step that skipped validation, or (kChecked) a row whose metadata breaks
  // the checks: the row is written -1
  bool request_in_range;
  bool translate_compressed;     // prefill, or a local-form decode row
  int32_t position;              // prefill: pos(t) (SPEC §2), what the token plan records
  int32_t swa_start;             // prefill: position of window column 0
  int32_t swa_len;               // prefill
  int32_t topk_len;              // prefill
  int32_t compressed_count;      // leading columns of compressed_in that hold values
  const int32_t* swa_table;      // the request's SWA block-table row (request in range)
  const int32_t* compressed_table;  // the request's compressed block-table row
};

DSV4_HD DSV4_INLINE int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

// Which row kinds a launch holds: a decode-only or prefill-only step compiles (and fetches,
// cold, after every other kernel) only the code of its rows.
enum class RowKinds : uint8_t { kDecode, kPrefill, kBoth };

template <RowKinds kRows>
DSV4_HD DSV4_INLINE bool is_decode_row(const MixedSparseIndicesArgs& a, int32_t t) {
  if constexpr (kRows == RowKinds::kDecode) return true;
  if constexpr (kRows == RowKinds::kPrefill) return false;
  return t < a.num_decode_tokens;
}

#if DSV4_ROW_METADATA >= 2
// Whether an unchecked prefill row without a token plan loads the last request's metadata at
// its start, before its own request is known.
DSV4_HD DSV4_INLINE bool early_metadata(const MixedSparseIndicesArgs& a, const RowStart& s) {
  return !s.decode && a.token_plan_in == nullptr && a.num_requests >= 1;
}
#endif

// kChecked rows read token_to_req even in a one-request step: checking it is their job (SPEC §7).
template <RowKinds kRows = RowKinds::kBoth, bool kChecked = false>
DSV4_HD DSV4_INLINE RowStart start_row(const MixedSparseIndicesArgs& a, int32_t t) {
  RowStart s{};
  s.token = t;
  s.out = a.sparse_indices + static_cast<int64_t>(t) * a.output_stride;
  s.decode = is_decode_row<kRows>(a, t);
  if (!s.decode && a.token_plan_in != nullptr) {
    const TokenPlanEntry e = load_plan_entry(a.token_plan_in + t);
    s.request = e.request;
    s.position = e.position;
#if DSV4_ROW_METADATA >= 1
  } else if (!kChecked && !s.decode && a.num_requests == 1) {
    // validated: every entry is 0 (SPEC §4). Prefill rows only: a decode-only kernel keeps its
    // code (one decode a step gains nothing worth a branch in every decode row).
    s.request = 0;
#endif
  } else {
    s.request = load_input(a.token_to_req + t);
  }
#if DSV4_ROW_METADATA >= 2
  if constexpr (!kChecked) {
    // At addresses known at launch: a planned row, whose request comes from its plan entry,
    // must not wait for that entry here (it did when they were indexed by the request's
    // register: +1.5 to +5.4 % on planned builds, bench/results/2026-12-07-row-metadata-trial).
    if (early_metadata(a, s)) {
      const int32_t last = a.num_requests - 1;
      s.last_begin = load_input(a.query_start_loc + last);
      s.last_end = load_input(a.query_start_loc + last + 1);
      s.last_seq_len = load_input(a.seq_lens + last);
    }
  }
#endif
  if (s.decode) {
    s.window_in = a.decode_swa_indices + static_cast<int64_t>(t) * a.decode_swa_stride;
    s.compressed_in = a.decode_width > 0
                          ? a.decode_compressed + static_cast<int64_t>(t) * a.decode_compressed_stride
                          : nullptr;
    s.compressed_width = a.decode_width;
    s.decode_length_input = 1;
    if (a.decode_local) {
      if (a.decode_valid != nullptr) s.decode_length_input = a.decode_valid[t];
    } else if (a.decode_compressed_lens != nullptr) {
      s.decode_length_input = load_input(a.decode_compressed_lens + t);
    }
  } else {
    s.compressed_in =
        a.prefill_width > 0
            ? a.prefill_topk + static_cast<int64_t>(t - a.num_decode_tokens) * a.prefill_topk_stride
            : nullptr;
    s.compressed_width = a.prefill_width;
  }
  return s;
}

// pos(t) = seq_lens[r] - query length + offset in the request (SPEC §2).
DSV4_HD DSV4_INLINE int32_t prefill_position(int32_t t, int32_t begin, int32_t end, int32_t seq_len) {
  return seq_len - (end - begin) + (t - begin);
}

// What a prefill row's columns share, from its position. (Memory-safe for any position, as a
// token plan entry may hold: no overflow, and lookups check their blocks.)
DSV4_HD DSV4_INLINE void plan_prefill(const MixedSparseIndicesArgs& a, int32_t position, RowPlan& p) {
  p.translate_compressed = true;
  p.position = position;
  const int32_t next = position < INT32_MAX ? position + 1 : INT32_MAX;
  p.swa_len = min_i32(next, a.window);
  p.swa_start = position - p.swa_len + 1;
  p.topk_len = min_i32(next / a.ratio, a.topk);
  p.compressed_count = min_i32(p.topk_len, a.prefill_width);
}

template <bool kChecked = false>
DSV4_HD DSV4_INLINE RowPlan plan_row(const MixedSparseIndicesArgs& a, const RowStart& s) {
  RowPlan p{};
  p.request_in_range = static_cast<uint32_t>(s.request) < static_cast<uint32_t>(a.num_requests);
  if (!p.request_in_range) return p;
  p.swa_table = a.swa.row(s.request);
  p.compressed_table = a.compressed.row(s.request);
  if constexpr (kChecked) {  // every row's request metadata is read, to check it
    const int32_t begin = load_input(a.query_start_loc + s.request);
    const int32_t end = load_input(a.query_start_loc + s.request + 1);
    const int32_t seq_len = load_input(a.seq_lens + s.request);
    p.request_in_range = row_metadata_valid(a, s.token, s.decode, begin, end, seq_len, s.decode_length_input);
    if (!p.request_in_range) return p;
    if (!s.decode) {
      plan_prefill(a, prefill_position(s.token, begin, end, seq_len), p);
      return p;
    }
  }
  if (s.decode) {
    p.translate_compressed = a.decode_local;
    p.compressed_count = a.decode_width;
    return p;
  }
  if constexpr (!kChecked) {
    if (a.token_plan_in != nullptr) {
      plan_prefill(a, s.position, p);
#if DSV4_ROW_METADATA >= 2
    } else if (early_metadata(a, s) && s.request == a.num_requests - 1) {
      plan_prefill(a, prefill_position(s.token, s.last_begin, s.last_end, s.last_seq_len), p);
#endif
    } else {
      const int32_t begin = load_input(a.query_start_loc + s.request);
      const int32_t end = load_input(a.query_start_loc + s.request + 1);
      plan_prefill(a, prefill_position(s.token, begin, end, load_input(a.seq_lens + s.request)), p);
    }
  }
  return p;
}

// kLanes consecutive input columns from p; one 16-byte streaming load on the vector path
// (whose rows are 16-byte aligned: MixedSparseIndicesArgs::vector_path).
template <int kLanes>
DSV4_HD DSV4_INLINE void load_columns(const int32_t* p, int32_t (&v)[kLanes]) {
  if constexpr (kLanes == 4) {
    load_stream4(p, v);
  } else {
    v[0] = load_input(p);
  }
}

template <int kLanes>
DSV4_HD DSV4_INLINE void store_chunk(int32_t* p, const int32_t (&v)[kLanes]) {
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

// What chunk k of the row reads from the inputs (needs start_row only): a decode row's window
// columns; compressed input columns j < compressed_width (-1 past them). A prefill window
// chunk reads nothing (its values come from positions).
// `readable`: compressed input columns worth reading (compressed_width before the plan is
// known, compressed_count after: columns past it are -1 whatever they hold).
template <int kLanes>
DSV4_HD DSV4_INLINE void load_chunk_inputs(const MixedSparseIndicesArgs& a, const RowStart& s,
                                           int32_t k, int32_t readable, int32_t (&v)[kLanes]) {
  const int32_t c0 = k * kLanes;
  if (c0 < a.window) {  // with kLanes = 4, W % 4 == 0: a chunk is in one part
    if (s.decode) {
      load_columns<kLanes>(s.window_in + c0, v);
    } else {
      DSV4_UNROLL
      for (int e = 0; e < kLanes; ++e) v[e] = -1;
    }
    return;
  }
  const int32_t j0 = c0 - a.window;
  if (j0 + kLanes <= readable) {
    load_columns<kLanes>(s.compressed_in + j0, v);
    return;
  }
  DSV4_UNROLL
  for (int e = 0; e < kLanes; ++e) v[e] = j0 + e < readable ? load_input(s.compressed_in + j0 + e) : -1;
}

// Turns chunk k's loaded inputs `v` into its output values (SPEC §3); the row's request is in
// range (build_row_share writes other rows as -1 itself). Window columns c < W:
// decode copies its SWA row; prefill looks up positions swa_start + c. Compressed columns
// W + j: input j if j < compressed_count, else -1; global decode slots are copied, local
// indices >= 0 translated through the compressed table. *picks counts the translated inputs
// >= 0 (a local-form decode row's length).
template <bool kPowerOfTwo, int kLanes>
DSV4_HD DSV4_INLINE void finish_chunk(const MixedSparseIndicesArgs& a, const RowStart& s,
                                      const RowPlan& p, int32_t k, int32_t (&v)[kLanes],
                                      int32_t* picks, int32_t* errors) {
  const int32_t c0 = k * kLanes;
  if (c0 < a.window) {
    if (s.decode) return;
    if constexpr (kPowerOfTwo && kLanes > 1) {
      // Consecutive positions, mostly in one block: one table read for the chunk.
      const int32_t first = p.swa_start + c0;
      const uint32_t block = static_cast<uint32_t>(first) >> a.swa.log2_block_size;
      if (c0 + kLanes <= p.swa_len &&
          block == static_cast<uint32_t>(first + kLanes - 1) >> a.swa.log2_block_size) {
        a.swa.lookup_run<kLanes>(p.swa_table, first, block, v, errors);
        return;
      }
    }
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) {
      const int32_t c = c0 + e;
      v[e] = a.swa.lookup<kPowerOfTwo>(p.swa_table, p.swa_start + c, c < p.swa_len, errors);
    }
    return;
  }
  const int32_t j0 = c0 - a.window;
  if (j0 >= p.compressed_count) {  // past the row's values (prefill tokens early in a request)
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) v[e] = -1;
    return;
  }
  if (j0 + kLanes > p.compressed_count) {  // the one chunk that straddles the count
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) v[e] = j0 + e < p.compressed_count ? v[e] : -1;
  }
  if (!p.translate_compressed) return;  // global decode slots: copied
  if (s.decode) {
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) *picks += v[e] >= 0 ? 1 : 0;
  }
  if constexpr (kPowerOfTwo && kLanes == 4) {
    // Consecutive indices in one block (C128A's positional top-k, runs in sorted top-k): one
    // table read for the chunk.
    // (Unsigned differences: no overflow; one block for v[0] >= 0 and v[3] rules out a wrap.)
    const uint32_t u0 = static_cast<uint32_t>(v[0]);
    const uint32_t block = u0 >> a.compressed.log2_block_size;
    if (v[0] >= 0 && static_cast<uint32_t>(v[1]) - u0 == 1u && static_cast<uint32_t>(v[2]) - u0 == 2u &&
        static_cast<uint32_t>(v[3]) - u0 == 3u && block == static_cast<uint32_t>(v[3]) >> a.compressed.log2_block_size) {
      a.compressed.lookup_run<kLanes>(p.compressed_table, v[0], block, v, errors);
      return;
    }
  }
  DSV4_UNROLL
  for (int e = 0; e < kLanes; ++e) {
    v[e] = a.compressed.lookup<kPowerOfTwo>(p.compressed_table, v[e], v[e] >= 0, errors);
  }
}

// sparse_lens[t] (SPEC §3); `picks` = the row's translated compressed inputs >= 0.
DSV4_HD DSV4_INLINE int32_t row_length(const MixedSparseIndicesArgs& a, const RowStart& s,
                                       const RowPlan& p, int32_t picks) {
  if (!p.request_in_range) return 0;
  if (!s.decode) return a.window + p.topk_len;
  if (a.decode_width == 0) return a.window;
  if (!a.decode_local) {
    return a.window + (a.decode_compressed_lens != nullptr ? s.decode_length_input : a.decode_width);
  }
  return a.window + (s.decode_length_input != 0 ? picks : 0);  // decode_valid[t]
}

// Thread `rank`'s passes over `chunks` chunks (pass i starts at chunk rank + i * pass_stride),
// software-pipelined with two register buffers taking turns: each pass's loads are issued
// before the pass ahead of it is finished (translated and stored). `va` holds the first pass's
// loads on entry (issued before the row's plan). load_pass(first, readable, v) fills v;
// finish_pass(first, v) finishes it.
template <typename Buffer, typename LoadPass, typename FinishPass>
DSV4_HD DSV4_INLINE void run_pipelined_passes(int32_t rank, int32_t chunks, int32_t pass_stride, int32_t readable,
                                              Buffer& va, Buffer& vb, const LoadPass& load_pass,
                                              const FinishPass& finish_pass) {
  for (int32_t first = rank; first < chunks; first += 2 * pass_stride) {
    if (first + pass_stride < chunks) load_pass(first + pass_stride, readable, vb);
    finish_pass(first, va);
    if (first + pass_stride >= chunks) break;
    if (first + 2 * pass_stride < chunks) load_pass(first + 2 * pass_stride, readable, va);
    finish_pass(first + pass_stride, vb);
  }
}

// Thread `rank`'s share of token t's row: its chunks (in pass order: i-th = chunk_at(i), i = rank,
// rank + group_threads, ...), in passes of kChunks (run_pipelined_passes), the first pass's
// loads issued before the plan.
// picks: the thread's part of the row's length (local decode).
struct RowShare {
  RowStart start;
  RowPlan plan;
  int32_t picks;
};
// Thread `rank`'s share of writing row t's columns as -1 (a padding row, or one that is not
// built); `out` is the row's output.
template <int kLanes, bool kParts = true>
DSV4_HD DSV4_INLINE void store_minus_one_row(const MixedSparseIndicesArgs& a, int32_t* out, int32_t rank,
                                             int32_t group_threads) {
  using Columns = RowColumns<kParts>;
  DSV4_NO_UNROLL
  for (int32_t c = Columns::first(a) + rank * kLanes; c < Columns::end(a); c += group_threads * kLanes) {
    int32_t minus_one[kLanes];
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) minus_one[e] = -1;
    store_chunk<kLanes>(out + (c - Columns::shift(a)), minus_one);
  }
}

// A padding row t in [T, T_cap) (SPEC §7): -1 with length 0, nothing read.
template <bool kVec4, bool kParts = true>
DSV4_HD DSV4_INLINE void write_padding_row(const MixedSparseIndicesArgs& a, int32_t t, int32_t rank,
                                           int32_t group_threads) {
  store_minus_one_row<kVec4 ? 4 : 1, kParts>(a, a.sparse_indices + static_cast<int64_t>(t) * a.output_stride, rank,
                                             group_threads);
  if (rank == 0 && RowColumns<kParts>::writes_lens(a)) a.sparse_lens[t] = 0;
}

// Compressed columns W + j0 .. W + j0 + 3 of a prefill row on the fast path (power-of-two
// blocks, 16-byte chunks), their inputs in v: -1 past the row's values (compressed_count),
// translated, stored at compressed_out + j0.
DSV4_HD DSV4_INLINE void finish_prefill_compressed_chunk(const MixedSparseIndicesArgs& a, const RowPlan& p,
                                                         int32_t j0, int32_t (&v)[4], int32_t* compressed_out,
                                                         int32_t* errors) {
  const int32_t count = p.compressed_count;
  if (j0 >= count) {  // past the row's values (prefill tokens early in a request)
    DSV4_UNROLL
    for (int e = 0; e < 4; ++e) v[e] = -1;
    store_chunk<4>(compressed_out + j0, v);
    return;
  }
  if (j0 + 4 > count) {  // the chunk that straddles the row's values
    DSV4_UNROLL
    for (int e = 0; e < 4; ++e) v[e] = j0 + e < count ? v[e] : -1;
  }
  // Consecutive indices in one block (C128A's positions; a C4A indexer's picks rarely
  // are, and skip the test): one table read for the chunk.
  const uint32_t u0 = static_cast<uint32_t>(v[0]);
  const uint32_t block = u0 >> a.compressed.log2_block_size;
  if (a.ratio != 4 && v[0] >= 0 && static_cast<uint32_t>(v[1]) - u0 == 1u && static_cast<uint32_t>(v[2]) - u0 == 2u &&
      static_cast<uint32_t>(v[3]) - u0 == 3u && block == static_cast<uint32_t>(v[3]) >> a.compressed.log2_block_size) {
    a.compressed.lookup_run<4>(p.compressed_table, v[0], block, v, errors);
  } else {
    a.compressed.lookup_indices<4>(p.compressed_table, v, errors);
  }
  store_chunk<4>(compressed_out + j0, v);
}

// The gathered-lookups kernel's compressed chunks (build_prefill_row_share<..., kGatherLookups>):
// a chunk's lookup in two halves, so that a pass issues every chunk's table reads before it
// consumes any, where finish_prefill_compressed_chunk waits on each chunk's reads in turn.
// Rows of many passes gain (C128A after 120K, 1,152 positions in groups of 64); which builds
// take it, and what it measured, is prefill_gathers_lookups' comment.
struct GatheredChunk {
  uint32_t physical[4];
  bool run;  // four consecutive indices in one block: physical[0] is that block's entry
};

// Whether a fast-path compressed chunk's indices are consecutive in one block (C128A's
// positions, with blocks of 4 or more; a C4A indexer's picks rarely are, and skip the test):
// one table read for the chunk. (The test finish_prefill_compressed_chunk makes inline:
// calling this there changes the default kernels' SASS. Here blocks of fewer than 4, such as
// C128A's production 256 / 128 = 2, skip it too: four indices never fit one of them.)
DSV4_HD DSV4_INLINE bool compressed_run(const MixedSparseIndicesArgs& a, const int32_t (&v)[4]) {
  const uint32_t u0 = static_cast<uint32_t>(v[0]);
  return a.ratio != 4 && a.compressed.log2_block_size >= 2 && v[0] >= 0 && static_cast<uint32_t>(v[1]) - u0 == 1u &&
         static_cast<uint32_t>(v[2]) - u0 == 2u && static_cast<uint32_t>(v[3]) - u0 == 3u &&
         u0 >> a.compressed.log2_block_size == static_cast<uint32_t>(v[3]) >> a.compressed.log2_block_size;
}

// The compressed chunk at j0, its inputs in v: -1 past the row's values, then its table reads issued.
DSV4_HD DSV4_INLINE void gather_prefill_compressed_chunk(const MixedSparseIndicesArgs& a, const RowPlan& p, int32_t j0,
                                                         int32_t (&v)[4], GatheredChunk& g) {
  DSV4_UNROLL
  for (int e = 0; e < 4; ++e) v[e] = j0 + e < p.compressed_count ? v[e] : -1;
  g.run = compressed_run(a, v);
  if (g.run) {
    g.physical[0] = a.compressed.gather_run(p.compressed_table, static_cast<uint32_t>(v[0]) >> a.compressed.log2_block_size);
  } else {
    a.compressed.gather_blocks<4>(p.compressed_table, v, g.physical);
  }
}

// ... and translated from them, as finish_prefill_compressed_chunk translates it.
DSV4_HD DSV4_INLINE void apply_prefill_compressed_chunk(const MixedSparseIndicesArgs& a, int32_t (&v)[4],
                                                        const GatheredChunk& g, int32_t* errors) {
  if (g.run) {
    a.compressed.apply_run<4>(g.physical[0], v[0], v, errors);
  } else {
    a.compressed.apply_blocks<4>(v, g.physical, errors);
  }
}

// Thread `rank`'s window chunks (rank, rank + group_threads, ...) of a prefill row on the fast
// path: positions swa_start + c for c < swa_len, looked up in the SWA table, stored at out + c.
// (Continuing the compressed chunks' round over the ranks instead, so that C128A after 120K
// takes 5 chunks a rank rather than 6 and 4, was 0.2 us slower on it and on Flash C4A 8K:
// bench/results/2026-12-04-h200-window-rank-trial/.)
DSV4_HD DSV4_INLINE void build_prefill_window(const MixedSparseIndicesArgs& a, const RowPlan& p, int32_t* out,
                                              int32_t rank, int32_t group_threads, int32_t* errors) {
  for (int32_t k = rank; k < a.window / 4; k += group_threads) {
    const int32_t c0 = 4 * k;
    int32_t v[4];
    const int32_t first = p.swa_start + c0;
    const uint32_t block = static_cast<uint32_t>(first) >> a.swa.log2_block_size;
    if (c0 + 4 <= p.swa_len && block == static_cast<uint32_t>(first + 3) >> a.swa.log2_block_size) {
      a.swa.lookup_run<4>(p.swa_table, first, block, v, errors);
    } else {
      DSV4_UNROLL
      for (int e = 0; e < 4; ++e) v[e] = a.swa.lookup<true>(p.swa_table, first + e, c0 + e < p.swa_len, errors);
    }
    store_chunk<4>(out + c0, v);
  }
}

// The SPEC §8 parts the fast prefill row below writes: the window [0, W), the compressed
// columns [W, W + P_cap) (in place, or shifted to column 0 for the split form's segment), or
// both; every part kernel_args.cpp makes (RowPart) is one of them.
DSV4_HD DSV4_INLINE bool fast_prefill_part(const MixedSparseIndicesArgs& a) {
  return (a.first_column == 0 || a.first_column == a.window) && (a.end_column == a.window || a.end_column == a.row_width) &&
         (a.output_shift == 0 || a.output_shift == a.first_column);
}

// A prefill row on the fast path (power-of-two blocks, 16-byte chunks; with kParts, a
// fast_prefill_part): the same values, lengths and error counts as the general build_row_share
// below, in fewer instructions per column (the kernels are issue-bound there: Nsight,
// bench/results/). kChecked (SPEC §7 run-time sizes, resolved into `a`): the metadata checked by
// plan_row<true> as on the general path. Thread `rank` owns compressed chunks rank, rank + group_threads, ...
// (in passes of kChunks, the next pass's inputs loaded before this one is translated, the
// first pass's before the plan), then window chunks the same way (before the passes where
// builds_window_first says so). A part without compressed columns reads no top-k input.
// kGatherLookups: a pass's compressed chunks gathered (GatheredChunk), the same values.
template <int kChunks, bool kParts = false, bool kChecked = false, bool kGatherLookups = false>
DSV4_HD DSV4_INLINE RowShare build_prefill_row_share(const MixedSparseIndicesArgs& a, int32_t t, int32_t rank,
                                                     int32_t group_threads, int32_t* errors) {
  using Columns = RowColumns<kParts>;
  RowShare share{start_row<RowKinds::kPrefill, kChecked>(a, t), RowPlan{}, 0};
  const int32_t window_chunks = a.window / 4;
  const int32_t compressed_chunks = Columns::end(a) / 4 - window_chunks;  // written (0: a window part)
  const int32_t pass = kChunks * group_threads;
  const int32_t* in = share.start.compressed_in;
  // Compressed chunk i's input columns 4i.. below `readable` (-1 past them).
  const auto load_pass = [&](int32_t first, int32_t readable, int32_t(&v)[kChunks][4]) {
    DSV4_UNROLL
    for (int b = 0; b < kChunks; ++b) {
      const int32_t j0 = 4 * (first + b * group_threads);
      if (j0 >= readable) {  // past the input's values, or past the row's compressed chunks
        DSV4_UNROLL
        for (int e = 0; e < 4; ++e) v[b][e] = -1;
      } else if (j0 + 4 <= readable) {
        load_stream4(in + j0, v[b]);
      } else {
        DSV4_UNROLL
        for (int e = 0; e < 4; ++e) v[b][e] = j0 + e < readable ? load_input(in + j0 + e) : -1;
      }
    }
  };
  int32_t va[kChunks][4] = {};
  int32_t vb[kChunks][4] = {};
  load_pass(rank, min_i32(share.start.compressed_width, 4 * compressed_chunks), va);
  share.plan = plan_row<kChecked>(a, share.start);
  // Unchecked: unreachable after validation, memory-safe all the same. Checked: a row whose
  // metadata breaks the checks.
  if (!share.plan.request_in_range) {
    store_minus_one_row<4, kParts>(a, share.start.out, rank, group_threads);
    return share;
  }
  const RowPlan& p = share.plan;
  const int32_t count = p.compressed_count;
  int32_t* out = share.start.out;
  int32_t* compressed_out = out + (a.window - Columns::shift(a));  // column W's place
  const auto finish_pass = [&](int32_t first, int32_t(&v)[kChunks][4]) {
    if constexpr (kGatherLookups) {  // every table read of the pass issued before any is consumed
      GatheredChunk g[kChunks] = {};
      DSV4_UNROLL
      for (int b = 0; b < kChunks; ++b) {
        const int32_t i = first + b * group_threads;
        if (i < compressed_chunks) gather_prefill_compressed_chunk(a, p, 4 * i, v[b], g[b]);
      }
      DSV4_UNROLL
      for (int b = 0; b < kChunks; ++b) {
        const int32_t i = first + b * group_threads;
        if (i < compressed_chunks) {
          apply_prefill_compressed_chunk(a, v[b], g[b], errors);
          store_chunk<4>(compressed_out + 4 * i, v[b]);
        }
      }
    } else {
      DSV4_UNROLL
      for (int b = 0; b < kChunks; ++b) {
        const int32_t i = first + b * group_threads;
        if (i < compressed_chunks) finish_prefill_compressed_chunk(a, p, 4 * i, v[b], compressed_out, errors);
      }
    }
  };
  const bool window = Columns::first(a) == 0;  // the part holds the window
  const bool window_first = window && builds_window_first(group_threads, t);
  if (window_first) build_prefill_window(a, p, out, rank, group_threads, errors);
  run_pipelined_passes(rank, compressed_chunks, pass, count, va, vb, load_pass, finish_pass);
  if (window && !window_first) build_prefill_window(a, p, out, rank, group_threads, errors);
  return share;
}

template <bool kPowerOfTwo, bool kVec4, int kChunks, RowKinds kRows = RowKinds::kBoth, bool kChecked = false,
          bool kParts = true, bool kGatherLookups = false>
DSV4_HD DSV4_INLINE RowShare build_row_share(const MixedSparseIndicesArgs& a, int32_t t, int32_t rank,
                                             int32_t group_threads, int32_t* errors) {
  // (checked builds too: their prefill rows, in step graphs, took 3-6 % longer on the general
  // path; bench/results/2026-12-03-h200-batched-lookups-trial/)
  if constexpr (kPowerOfTwo && kVec4 && kRows != RowKinds::kDecode) {
    if (!is_decode_row<kRows>(a, t) && (!kParts || fast_prefill_part(a))) {
      return build_prefill_row_share<kChunks, kParts, kChecked, kGatherLookups>(a, t, rank, group_threads, errors);
    }
  }
  constexpr int32_t kLanes = kVec4 ? 4 : 1;
  using Columns = RowColumns<kParts>;
  const int32_t first_chunk = Columns::first(a) / kLanes;  // the chunks written: [first_chunk, + chunks)
  const int32_t chunks = Columns::end(a) / kLanes - first_chunk;
  const int32_t pass = kChunks * group_threads;
  RowShare share{start_row<kRows, kChecked>(a, t), RowPlan{}, 0};
  // (read only where loaded; initialized for the compilers' flow analysis)
  int32_t va[kChunks][kLanes] = {};
  int32_t vb[kChunks][kLanes] = {};
  // Passes visit the compressed chunks first and the window's last: a prefill row's window
  // reads nothing, so the first pass (issued before the plan) must hold compressed inputs.
  const int32_t window_chunks = a.window / kLanes - first_chunk;  // written window chunks (<= 0: none)
  // (a whole row: window_chunks <= chunks, and rotating by all of them when P = 0 is no rotation)
  const int32_t rotate = !kParts || (window_chunks > 0 && window_chunks < chunks) ? window_chunks : 0;
  const auto chunk_at = [&](int32_t i) {  // i-th chunk in pass order, i < chunks
    const int32_t k = i + rotate;
    return first_chunk + (k < chunks ? k : k - chunks);
  };
  const auto load_pass = [&](int32_t first, int32_t readable, int32_t(&v)[kChunks][kLanes]) {
    DSV4_UNROLL
    for (int b = 0; b < kChunks; ++b) {
      const int32_t i = first + b * group_threads;
      if (i < chunks) load_chunk_inputs<kLanes>(a, share.start, chunk_at(i), readable, v[b]);
    }
  };
  const auto finish_pass = [&](int32_t first, int32_t(&v)[kChunks][kLanes]) {
    DSV4_UNROLL
    for (int b = 0; b < kChunks; ++b) {
      const int32_t i = first + b * group_threads;
      if (i < chunks) {
        const int32_t k = chunk_at(i);
        finish_chunk<kPowerOfTwo, kLanes>(a, share.start, share.plan, k, v[b], &share.picks, errors);
        store_chunk<kLanes>(share.start.out + (k * kLanes - Columns::shift(a)), v[b]);
      }
    }
  };
  load_pass(rank, share.start.compressed_width, va);
  share.plan = plan_row<kChecked>(a, share.start);
  // Unchecked: unreachable after validation, keeps a drifted copy memory-safe. Checked: a
  // row whose metadata breaks the checks.
  if (!share.plan.request_in_range) {
    store_minus_one_row<kLanes, kParts>(a, share.start.out, rank, group_threads);
    return share;
  }
  run_pipelined_passes(rank, chunks, pass, share.plan.compressed_count, va, vb, load_pass, finish_pass);
  return share;
}

// The row's length, (unchecked) its one error for an out-of-range request and its token plan
// entry (a prefill row, when asked; an out-of-range request is recorded as it is, so that a
// build reading the plan fails the row the same way): by the group's rank 0 once the group's
// picks are summed. A checked row that is not built is a structural failure, reported by the
// status (metadata_checks.h), not a content error.
template <bool kChecked = false, bool kParts = true>
DSV4_HD DSV4_INLINE void finish_row(const MixedSparseIndicesArgs& a, const RowShare& share,
                                    int32_t picks, int32_t* errors) {
  if (RowColumns<kParts>::writes_lens(a)) {  // a row not built: length 0 in every part
    a.sparse_lens[share.start.token] =
        share.plan.request_in_range ? row_length(a, share.start, share.plan, picks) - RowColumns<kParts>::length_offset(a) : 0;
  }
  if (!kChecked && a.token_plan_out != nullptr && !share.start.decode) {
    a.token_plan_out[share.start.token] = TokenPlanEntry{share.start.request, share.plan.position};
  }
  if (!kChecked && !share.plan.request_in_range) ++*errors;
}

// A whole row by one thread (the host backend). kChecked: `a` holds the resolved run-time
// sizes, and t < T.
template <bool kPowerOfTwo, bool kVec4, bool kChecked = false>
DSV4_HD DSV4_INLINE void build_row(const MixedSparseIndicesArgs& a, int32_t t, int32_t* errors) {
  const RowShare share = build_row_share<kPowerOfTwo, kVec4, 1, RowKinds::kBoth, kChecked>(a, t, 0, 1, errors);
  finish_row<kChecked>(a, share, share.picks, errors);
}

}  // namespace dsv4::kernels
