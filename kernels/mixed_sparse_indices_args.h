// The POD argument struct of the mixed-sparse-indices kernels (SPEC §3), like FlashInfer's
// paged_kv_t: raw pointers, strides and sizes, plus __host__ __device__ accessors. It is
// filled on the host in one place (optimized/kernel_args.h) from a validated BuildRequest.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/fast_divider.h"
#include "kernels/host_device.h"
#include "kernels/step_sizes.h"
#include "kernels/token_plan.h"

namespace dsv4::kernels {

// Reads one input element; on the device through the read-only data cache (inputs never
// alias outputs).
DSV4_HD DSV4_INLINE int32_t load_input(const int32_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// Reads one streamed input element group (16 bytes) that no other thread re-reads: on the
// device without allocating in L1, so that the block-table rows every row looks up stay there.
DSV4_HD DSV4_INLINE void load_stream4(const int32_t* p, int32_t (&v)[4]) {  // p 16-byte aligned
#if defined(__CUDA_ARCH__)
  asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "l"(p));
#else
  for (int e = 0; e < 4; ++e) v[e] = p[e];
#endif
}

// A paged cache's block table (SPEC §2, §7): num_rows x blocks_per_row, row r at
// table + r * row_stride; slot = base_offset + entry * block_span + i % block_size.
struct BlockTableView {
  const int32_t* table;
  int32_t num_rows;
  int32_t blocks_per_row;  // NB
  int32_t block_size;      // B >= 1
  int64_t row_stride;      // >= NB
  int32_t block_span;      // S >= B
  int32_t base_offset;     // O
  FastDivider block_divider;
  // The 32-bit fast path: B a power of two (every production cache), S == B and O == 0:
  // block = i >> log2_block_size, offset = i & (B-1).
  bool power_of_two;
  uint32_t log2_block_size;  // when B is a power of two
  // The largest physical block id whose every slot (id * B + B - 1) fits int32: ids up to it
  // need neither the sign nor the overflow check, one unsigned compare covers both.
  uint32_t max_safe_block;
  // min(NB, 2^31 / B) (power_of_two): an index i >= 0 has i / B < 2^31 / B and a negative one,
  // as unsigned, i >> log2(B) >= 2^31 / B, so `i >> log2(B) < index_block_bound` says both
  // "i >= 0" and "its block is in the table" in one unsigned compare (lookup_indices).
  uint32_t index_block_bound;

  // Host only; block_size >= 1 and block_span >= block_size (validated before).
  static BlockTableView make(const int32_t* table, int32_t num_rows, int32_t blocks_per_row,
                             int32_t block_size, int64_t row_stride, int32_t block_span,
                             int32_t base_offset) {
    const int32_t b = block_size < 1 ? 1 : block_size;
    const int32_t span = block_span < b ? b : block_span;
    uint32_t log2 = 0;
    while ((int64_t{1} << log2) < b) ++log2;
    const bool fast = (int64_t{1} << log2) == b && span == b && base_offset == 0;
    const int64_t index_blocks = (int64_t{1} << 31) / b;
    return BlockTableView{table, num_rows, blocks_per_row, b, row_stride, span, base_offset,
                          FastDivider::make(b), fast, log2,
                          static_cast<uint32_t>((int64_t{INT32_MAX} - (b - 1)) / b),
                          static_cast<uint32_t>(blocks_per_row < index_blocks ? blocks_per_row : index_blocks)};
  }

  // A dense table without span or offset.
  static BlockTableView make(const int32_t* table, int32_t num_rows, int32_t blocks_per_row,
                             int32_t block_size) {
    return make(table, num_rows, blocks_per_row, block_size, blocks_per_row, block_size, 0);
  }

  // Row r of the table, for 0 <= r < num_rows: resolved once per row, not per column.
  DSV4_HD DSV4_INLINE const int32_t* row(int32_t r) const {
    return table + static_cast<int64_t>(r) * row_stride;
  }

  // slot(r, i) = O + table[r][i / B] * S + i % B for i >= 0, given row_table = row(r), when
  // `wanted`; else -1. A block past the table's width, a negative entry or a slot outside
  // [0, 2^31) is a content error (SPEC §4, §7): -1, counted in *errors. Reads nothing outside
  // row r of the table, whatever i is. Branch-free (a warp's lanes diverge on every -1 otherwise).
  // kPowerOfTwo (only when power_of_two): shift and mask instead of the divider, and the
  // max_safe_block compare is exact (B divides 2^31), so no 64-bit product is needed.
  // Otherwise the slot is formed in 64 bits with the span and the offset.
  template <bool kPowerOfTwo = false>
  DSV4_HD DSV4_INLINE int32_t lookup(const int32_t* row_table, int32_t i, bool wanted,
                                     int32_t* errors) const {
    uint32_t block, offset;
    if constexpr (kPowerOfTwo) {
      block = static_cast<uint32_t>(i) >> log2_block_size;
      offset = static_cast<uint32_t>(i) & static_cast<uint32_t>(block_size - 1);
    } else {
      block = block_divider.divide(static_cast<uint32_t>(i));
      offset = static_cast<uint32_t>(i) - block * static_cast<uint32_t>(block_size);
    }
    const bool in_table = wanted && block < static_cast<uint32_t>(blocks_per_row);
    // -1 (as unsigned, above every safe id) stands for "no block" below.
    const uint32_t physical = in_table ? static_cast<uint32_t>(load_input(row_table + block)) : ~0u;
    bool fits;
    int32_t slot;
    if constexpr (kPowerOfTwo) {
      fits = physical <= max_safe_block;
      slot = static_cast<int32_t>(physical * static_cast<uint32_t>(block_size) + offset);
    } else {
      const int64_t value = int64_t{base_offset} + int64_t{static_cast<int32_t>(physical)} * block_span + offset;
      fits = static_cast<int32_t>(physical) >= 0 && value >= 0 && value <= int64_t{INT32_MAX};
      slot = static_cast<int32_t>(value);
    }
    if (wanted && !fits) ++*errors;
    return fits ? slot : -1;
  }

  // lookup(row_table, v[e], v[e] >= 0, errors) for kLanes compressed indices in place (the
  // power_of_two fast path): one unsigned compare per index for both conditions
  // (index_block_bound), the table reads issued together, the errors counted once.
  template <int kLanes>
  DSV4_HD DSV4_INLINE void lookup_indices(const int32_t* row_table, int32_t (&v)[kLanes], int32_t* errors) const {
    uint32_t physical[kLanes];
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) {
      const uint32_t block = static_cast<uint32_t>(v[e]) >> log2_block_size;
      physical[e] = block < index_block_bound ? static_cast<uint32_t>(load_input(row_table + block)) : ~0u;
    }
    int32_t bad = 0;
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) {
      const bool fits = physical[e] <= max_safe_block;  // false for no block (~0u)
      bad += v[e] >= 0 && !fits ? 1 : 0;
      v[e] = fits ? static_cast<int32_t>(physical[e] * static_cast<uint32_t>(block_size) +
                                         (static_cast<uint32_t>(v[e]) & static_cast<uint32_t>(block_size - 1)))
                  : -1;
    }
    *errors += bad;
  }

  // lookup_indices in two halves, so that the gathered-lookups kernel issues the table reads of a
  // pass's chunks before it consumes any (lookup_indices consumes its reads at once, and the row
  // code branches between chunks: in the SASS each chunk waits for the one before).
  // gather_blocks reads the entries (~0u for a negative index or a block past the table);
  // apply_blocks forms the slots and counts the errors. (lookup_indices written as the two
  // halves compiles the default kernels differently: 18 of them changed SASS, so it stays whole.)
  template <int kLanes>
  DSV4_HD DSV4_INLINE void gather_blocks(const int32_t* row_table, const int32_t (&v)[kLanes],
                                         uint32_t (&physical)[kLanes]) const {
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) {
      const uint32_t block = static_cast<uint32_t>(v[e]) >> log2_block_size;
      physical[e] = block < index_block_bound ? static_cast<uint32_t>(load_input(row_table + block)) : ~0u;
    }
  }
  template <int kLanes>
  DSV4_HD DSV4_INLINE void apply_blocks(int32_t (&v)[kLanes], const uint32_t (&physical)[kLanes],
                                        int32_t* errors) const {
    int32_t bad = 0;
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) {
      const bool fits = physical[e] <= max_safe_block;  // false for no block (~0u)
      bad += v[e] >= 0 && !fits ? 1 : 0;
      v[e] = fits ? static_cast<int32_t>(physical[e] * static_cast<uint32_t>(block_size) +
                                         (static_cast<uint32_t>(v[e]) & static_cast<uint32_t>(block_size - 1)))
                  : -1;
    }
    *errors += bad;
  }

  // kLanes consecutive indices first, first + 1, ... that all lie in block `block` (the
  // power_of_two fast path): one table read for the run. Same results and error counts as kLanes lookup()s.
  template <int kLanes>
  DSV4_HD DSV4_INLINE void lookup_run(const int32_t* row_table, int32_t first, uint32_t block,
                                      int32_t (&out)[kLanes], int32_t* errors) const {
    const bool in_table = block < static_cast<uint32_t>(blocks_per_row);
    const uint32_t physical = in_table ? static_cast<uint32_t>(load_input(row_table + block)) : ~0u;
    const bool fits = physical <= max_safe_block;
    const uint32_t slot0 = physical * static_cast<uint32_t>(block_size) +
                           (static_cast<uint32_t>(first) & static_cast<uint32_t>(block_size - 1));
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) out[e] = fits ? static_cast<int32_t>(slot0 + static_cast<uint32_t>(e)) : -1;
    if (!fits) *errors += kLanes;
  }

  // lookup_run in two halves (as lookup_indices): the block's entry (~0u past the table), then
  // the run's slots from it.
  DSV4_HD DSV4_INLINE uint32_t gather_run(const int32_t* row_table, uint32_t block) const {
    return block < static_cast<uint32_t>(blocks_per_row) ? static_cast<uint32_t>(load_input(row_table + block)) : ~0u;
  }
  template <int kLanes>
  DSV4_HD DSV4_INLINE void apply_run(uint32_t physical, int32_t first, int32_t (&out)[kLanes], int32_t* errors) const {
    const bool fits = physical <= max_safe_block;
    const uint32_t slot0 = physical * static_cast<uint32_t>(block_size) +
                           (static_cast<uint32_t>(first) & static_cast<uint32_t>(block_size - 1));
    DSV4_UNROLL
    for (int e = 0; e < kLanes; ++e) out[e] = fits ? static_cast<int32_t>(slot0 + static_cast<uint32_t>(e)) : -1;
    if (!fits) *errors += kLanes;
  }

  template <bool kPowerOfTwo = false>
  DSV4_HD DSV4_INLINE int32_t slot_in_row(const int32_t* row_table, int32_t i, int32_t* errors) const {
    return lookup<kPowerOfTwo>(row_table, i, true, errors);
  }

  template <bool kPowerOfTwo = false>
  DSV4_HD DSV4_INLINE int32_t slot(int32_t r, int32_t i, int32_t* errors) const {
    return slot_in_row<kPowerOfTwo>(row(r), i, errors);
  }
};

struct MixedSparseIndicesArgs {
  int32_t window;  // W
  int32_t ratio;   // >= 1
  int32_t topk;
  // With run_time_sizes these three are the capacities R_cap, T_cap, D_cap until the kernel
  // replaces them by the step's (resolve_run_time_sizes).
  int32_t num_requests;       // R
  int32_t num_tokens;         // T
  int32_t num_decode_tokens;  // D
  int32_t row_width;          // W + P_cap: the columns of a combined row
  int32_t num_rows;           // T_cap >= T: output rows; rows [T, T_cap) are padding
  const StepSizes* run_time_sizes;  // SPEC §7: T, D, R read at run time; null: the above
  int32_t prefill_rows;       // rows of prefill_topk (the T - D capacity with run_time_sizes)

  const int32_t* decode_swa_indices;  // D x W
  int64_t decode_swa_stride;
  const int32_t* decode_compressed;  // D x Kd; null when Kd == 0
  int64_t decode_compressed_stride;
  int32_t decode_width;  // Kd
  bool decode_local;
  const int32_t* decode_compressed_lens;  // D or null (global form)
  const uint8_t* decode_valid;            // D or null (local form)
  const int32_t* prefill_topk;            // (T-D) x Kp; null when Kp == 0
  int64_t prefill_topk_stride;
  int32_t prefill_width;  // Kp

  const int32_t* query_start_loc;  // R+1
  const int32_t* seq_lens;         // R
  const int32_t* token_to_req;     // T
  // The per-step token plan (token_plan.h; host-sized builds only): rows [D, T) of
  // token_plan_in give each prefill row's request and position in place of token_to_req,
  // query_start_loc and seq_lens; the build writes each prefill row's entry to token_plan_out.
  // Either may be null.
  const TokenPlanEntry* token_plan_in;
  TokenPlanEntry* token_plan_out;

  BlockTableView swa;
  BlockTableView compressed;  // the SWA table when the request gives none

  int32_t* sparse_indices;              // num_rows rows, row t at t * output_stride
  int32_t output_stride;                // >= the columns written (int32 like row_width: same address math)
  int32_t* sparse_lens;                 // num_rows; null: not written (SPEC §8 window part)
  // SPEC §8 (optimized/build_request.h RowPart): columns [first_column, end_column) of each
  // combined row are written, column c at output column c - output_shift, and sparse_lens[t]
  // gets the row's length minus length_offset. The whole row (SPEC §3): 0, row_width, 0, 0.
  int32_t first_column;
  int32_t end_column;
  int32_t output_shift;
  int32_t length_offset;
  unsigned long long* content_errors;   // device counter (CUDA kernels); unused on the host

  // Both caches' block sizes are powers of two: the kernels' shift/mask path.
  bool power_of_two_blocks;
  // 16-byte loads and stores throughout: W % 4 == 0, and the output and every matrix input
  // start 16-byte aligned with row strides that are multiples of 4 (every engine layout).
  bool vector_path;
};

// The columns a build writes (SPEC §8 parts), as the kernels read them: kParts = false compiles
// the whole row (SPEC §3: 0, row_width, 0, 0, lengths written) as constants, so that a whole
// build runs the code it ran before parts existed (their general form costs ~5 % more
// instructions per row).
template <bool kParts>
struct RowColumns {
  DSV4_HD static int32_t first(const MixedSparseIndicesArgs& a) { return kParts ? a.first_column : 0; }
  DSV4_HD static int32_t end(const MixedSparseIndicesArgs& a) { return kParts ? a.end_column : a.row_width; }
  DSV4_HD static int32_t shift(const MixedSparseIndicesArgs& a) { return kParts ? a.output_shift : 0; }
  DSV4_HD static int32_t length_offset(const MixedSparseIndicesArgs& a) { return kParts ? a.length_offset : 0; }
  DSV4_HD static bool writes_lens(const MixedSparseIndicesArgs& a) { return !kParts || a.sparse_lens != nullptr; }
};
DSV4_HD DSV4_INLINE bool whole_row_build(const MixedSparseIndicesArgs& a) {
  return a.first_column == 0 && a.end_column == a.row_width && a.output_shift == 0 && a.length_offset == 0 &&
         a.sparse_lens != nullptr;
}

static_assert(std::is_trivially_copyable_v<MixedSparseIndicesArgs> &&
                  std::is_standard_layout_v<MixedSparseIndicesArgs>,
              "kernel arguments must be a POD");

}  // namespace dsv4::kernels
