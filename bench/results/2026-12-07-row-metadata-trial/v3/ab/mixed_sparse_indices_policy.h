// Tuning knobs of the mixed-sparse-indices kernels in one place (CUB-style policy), and the
// host-side choice of launch shape derived from them.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"

// An unprepared prefill row (unchecked, no token plan) and its request's metadata, by level
// (DSV4_ROW_METADATA, a compile definition; a trial's, bench/results/2026-12-07-row-metadata-
// trial, so preprocessor-guarded: level 0 compiles main's source exactly): 0 reads token_to_req[t]
// at the row's start and the request's query_start_loc pair and seq_lens once the first pass's
// inputs are loading; 1 takes request 0 in a one-request step (validated: every entry 0, SPEC §4)
// without reading token_to_req; 2 as 1, and the last request's metadata is loaded at every such
// row's start, before the inputs (as a planned row's plan entry is): a row of the last request (a
// one-request step's, or the one prefill after a step's decodes) uses it, any other row loads
// its own as at 0.
#if !defined(DSV4_ROW_METADATA)
#define DSV4_ROW_METADATA 2
#endif

namespace dsv4::kernels {

struct MixedSparseIndicesPolicy {
  static constexpr int32_t kCtaThreads = 256;
  // Register cap (__launch_bounds__ min blocks) by chunks per pass: the most CTAs per SM whose
  // registers hold two passes' loads without spilling (1 -> 48 registers, 2 -> 64, 4 -> 80).
  // (DSV4_MIN_CTAS_PER_SM, a compile definition, replaces it for every chunk count: register-cap
  // trials only, bench/results/2026-12-02-h200-register-cap-trial.)
  static constexpr int32_t min_ctas_per_sm(int32_t chunks) {
#if defined(DSV4_MIN_CTAS_PER_SM)
    (void)chunks;
    return DSV4_MIN_CTAS_PER_SM;
#else
    return chunks <= 1 ? 5 : chunks <= 2 ? 4 : chunks <= 4 ? 3 : 2;
#endif
  }
  static constexpr int32_t kWarpThreads = 32;
  // Threads per row: a power of two from kMinGroupThreads to kCtaThreads (a whole CTA).
  static constexpr int32_t kMinGroupThreads = 8;
  // Many narrow rows (at most kNarrowRowPasses passes in groups of kMinGroupThreads: SWA-only,
  // C128A with E = 128) take those groups; wider rows start at kManyRowsGroupThreads. H200
  // sweeps, 5 repetitions (bench/results/2026-12-02-h200-policy-sweep): 8 beat 16 by 2-5 %
  // on SWA-only and C128A prefill 8K, 16 was fastest or level on every wider prefill row as a
  // single build (in whole steps rows wider than 4.5 passes of 16 did better wider: kMaxHalfPasses).
  static constexpr int32_t kNarrowRowPasses = 4;
  static constexpr int32_t kManyRowsGroupThreads = 16;
  // Chunks (16 bytes, or one column on the scalar path) a thread handles per pass: all their
  // loads, then all their lookups, then all their stores, the next pass's loads in flight
  // meanwhile. H200 sweeps of 1, 2, 4 and 8 (bench/results/) found 2 fastest or level on every
  // target shape (4 and 8: more registers, fewer rows resident; 1: too few loads in flight);
  // kChunkChoices is what is compiled.
  static constexpr int32_t kDefaultChunks = 2;
  static constexpr int32_t kChunkChoices[1] = {2};
  // A step gets groups wide enough for at least this many CTAs per SM (small steps: up to a
  // CTA per row), so that its rows spread over every SM. (2 widened 1K-token prefills one
  // step too far: 128 threads a row where 64 were 2-4 % faster, same sweeps.)
  static constexpr int32_t kMinCtasPerSm = 1;
  // Half passes a row may take in its starting group (kManyRowsGroupThreads for all but narrow
  // rows) before the group widens: 9, at most 4.5 passes. Whole cached prefill-8K steps on the
  // H200 (bench/results/2026-12-03-h200-group-step-trial): 2 passes (Flash's 128-chunk compressed
  // part in groups of 32: +3 %) and 8-9 (Pro's rows in groups of 16: +4-6 %) slower than 3-5.
  // With the heaviest rows first (cta_of_block), same call, 2 rounds (2026-12-03-h200-pass-rule-
  // trial): Pro's 288-chunk rows in 4.5 passes of 32 against 2.25 of 64: planned C4A 8K 18.70 ->
  // 18.26 us, with 32 decodes 20.04 -> 18.28, C128A after 120K 21.20 -> 20.92, the cached Pro step
  // 580.8 -> 562.8 us device; Flash's 160-chunk rows in 5 passes of 16 against 2.5 of 32: C4A
  // 8K 12.11 -> 12.37, Flash step 246.5 -> 258.8 (so 4.5, not 5).
  static constexpr int32_t kMaxHalfPasses = 9;
  // Decode-only steps whose rows have at most this many 16-byte chunks take the decode-chunk
  // kernel: a CTA per row (the chunks rounded up to whole warps), a thread per chunk.
  static constexpr int32_t kDecodeRowMaxChunks = 1024;
};

// How a launch maps rows to threads: `group_threads` threads own one row, each handling up to
// `chunks` of its chunks per pass. Grid: one CTA per kCtaThreads / group_threads rows; or, with
// decode_chunks, one CTA of group_threads threads per row, a thread per chunk (chunks = 1).
struct LaunchShape {
  int32_t group_threads = 0;
  int32_t chunks = 0;
  bool decode_chunks = false;
  bool operator==(const LaunchShape& o) const {
    return group_threads == o.group_threads && chunks == o.chunks && decode_chunks == o.decode_chunks;
  }
};

constexpr bool valid_group_threads(int32_t g) {
  return g >= MixedSparseIndicesPolicy::kMinGroupThreads && g <= MixedSparseIndicesPolicy::kCtaThreads &&
         (g & (g - 1)) == 0;
}

// Rows in flight bound these kernels (each row is a chain of dependent loads: token_to_req ->
// request metadata -> block table), so a step of many rows takes narrow groups, many rows per
// SM; rows wider than kMaxHalfPasses / 2 passes of them take wider groups; and a step too small to
// give every SM kMinCtasPerSm CTAs that way takes wider groups until it does (up to a CTA a
// row), so that its rows spread over the whole GPU. (Measured: kernel_bench --shape_sweep,
// bench/results/.)
constexpr LaunchShape choose_launch_shape(int32_t num_tokens, int32_t row_chunks, int32_t sm_count,
                                          int32_t chunks = MixedSparseIndicesPolicy::kDefaultChunks) {
  using P = MixedSparseIndicesPolicy;
  const bool narrow = static_cast<int64_t>(P::kMinGroupThreads) * chunks * P::kNarrowRowPasses >= row_chunks;
  int32_t g = narrow ? P::kMinGroupThreads : P::kManyRowsGroupThreads;
  while (g < P::kCtaThreads && static_cast<int64_t>(g) * chunks * P::kMaxHalfPasses < 2 * static_cast<int64_t>(row_chunks)) g *= 2;
  const int64_t min_ctas = static_cast<int64_t>(sm_count < 1 ? 1 : sm_count) * P::kMinCtasPerSm;
  while (g < P::kCtaThreads &&
         (static_cast<int64_t>(num_tokens) * g + P::kCtaThreads - 1) / P::kCtaThreads < min_ctas) {
    g *= 2;
  }
  return LaunchShape{g, chunks};
}

// The decode-chunk shape for rows of row_chunks 16-byte chunks, if they fit one CTA.
constexpr bool fits_decode_chunks(int32_t row_chunks) {
  return row_chunks >= 1 && row_chunks <= MixedSparseIndicesPolicy::kDecodeRowMaxChunks;
}
constexpr LaunchShape decode_chunk_shape(int32_t row_chunks) {
  constexpr int32_t kWarp = MixedSparseIndicesPolicy::kWarpThreads;
  return LaunchShape{(row_chunks + kWarp - 1) / kWarp * kWarp, 1, true};
}

// Whether a prefill-only build on the fast path takes the gathered-lookups kernel
// (prefill_rows_kernel<G, false, true>: a pass's compressed table reads all issued before any
// is consumed, GatheredChunk) when the launch enables it (MixedSparseIndicesLaunchConfig::
// gathered_lookups, on by default): whole rows of a compressed kind other than C4A (C128A,
// whose inputs are positions) in groups wider than kMinGroupThreads, i.e. rows of more than
// kNarrowRowPasses passes (C128A after long context). The rest keep the default kernels, whose
// code the gathered one slows when compiled beside it. H100, same run: C128A after 120K 0.8 us
// faster; C4A 0.1-0.5 us slower with the choice made at run time inside one kernel
// (bench/results/2026-12-05-h100-ef75528-gather-trial/), and slower still when its own rows
// were gathered (2026-12-05-h100-e1d62e1-lookup-trial/); as a kernel of its own, C128A after
// 120K 1.2 us faster and C4A level (2026-12-05-h100-8a6c6e1-gathered-lookups/). H200, same
// binary, on/off/off/on: C128A after 120K 21.6 -> 21.3 us, planned level at 20.7-20.8 (the
// build a cached step repeats), every other build within noise
// (2026-12-05-h200-5294f30-gathered-lookups/): kept on, as it gains on one GPU and costs on none.
DSV4_HD constexpr bool prefill_gathers_lookups(int32_t ratio, int32_t group_threads, bool whole_rows) {
  return whole_rows && ratio != 4 && group_threads > MixedSparseIndicesPolicy::kMinGroupThreads;
}

// Whether row t, built by a group of group_threads threads on the fast prefill path, builds its
// window (stores only) before its compressed passes (top-k reads, then stores). Rows in the
// narrowest groups (SWA-only, C128A with short context: the whole step resident in one wave)
// alternate in blocks of 4, so that half a wave stores its windows while the other half reads
// its top-k; a block of 4 rows is a warp's rows in such groups (no divergence). Wider groups,
// and the host backend's single threads, keep the compressed passes first. H200, 4 rounds
// alternating, planned C128A 8K 6.96 -> 6.72 us (Flash), 7.01 -> 6.71 (Pro), unplanned 7.20 ->
// 7.02 (2026-12-05-h200-narrow-window-order-trial); the H100 the same day -0.30 / -0.36. Every
// row window-first was -0.09 / -0.19 there, and the alternation in every group size cost C4A
// and C128A after 120K 0.16-0.29 us (bench/results/2026-12-05-h100-window-order-trial).
DSV4_HD constexpr bool builds_window_first(int32_t group_threads, int32_t t) {
  return group_threads == MixedSparseIndicesPolicy::kMinGroupThreads && (t >> 2 & 1) != 0;
}

// The CTA whose rows the block dispatched `block`-th of `grid` builds. The hardware starts a
// grid's blocks in index order and refills SMs as they finish, so the blocks dispatched first
// should hold the rows that take longest: the CTAs of decode rows (the first `decode_ctas`:
// the general row path, a full top-k each) in order, then the prefill CTAs from the last. A
// prefill row reads min(pos(t) / ratio, K) top-k columns, so the last rows of a request are
// its heaviest; built first, they leave the light first rows to fill the end of the last
// wave (longest-processing-time first). H200, same run against plain block order, planned
// builds: C4A prefill 8K 12.49 -> 11.96 us (Flash), 19.36 -> 18.56 (Pro); with 32 decodes
// 12.85 -> 12.33, 20.43 -> 19.89; every other prefill build level or faster; whole cached
// steps Flash 8K 252.4 -> 244.7, Pro 8K 581.7 -> 576.9, Pro 8K with 32 decodes 606.3 -> 588.9
// (Flash split and tail-only steps 1-2.7 us slower, within what the binaries alone move there:
// bench/results/2026-12-03-h200-cta-order-trial).
DSV4_HD constexpr uint32_t cta_of_block(uint32_t block, uint32_t grid, uint32_t decode_ctas) {
  return block < decode_ctas ? block : grid - 1 - (block - decode_ctas);
}

// The CTAs that hold decode rows when each CTA holds rows_per_cta rows: ceil(D / rows_per_cta)
// (CTA c holds a decode row exactly when c < decode_ctas, rows being decode rows first).
DSV4_HD constexpr uint32_t decode_ctas_of(int32_t num_decode_tokens, int32_t rows_per_cta) {
  return static_cast<uint32_t>(num_decode_tokens / rows_per_cta + (num_decode_tokens % rows_per_cta != 0 ? 1 : 0));
}

// CTAs for num_tokens >= 0 rows: one per kCtaThreads / group_threads rows, every row at once
// (no grid-stride loop: the hardware keeps as many CTAs resident as fit).
constexpr int64_t grid_ctas(const LaunchShape& shape, int32_t num_tokens) {
  if (shape.decode_chunks) return num_tokens;
  const int64_t rows_per_cta = MixedSparseIndicesPolicy::kCtaThreads / shape.group_threads;
  return (static_cast<int64_t>(num_tokens) + rows_per_cta - 1) / rows_per_cta;
}

}  // namespace dsv4::kernels
