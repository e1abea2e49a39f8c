// The POD argument struct of the mixed-sparse-indices kernels (SPEC §3), like FlashInfer's
// paged_kv_t: raw pointers, strides and sizes, plus __host__ __device__ accessors. It is
// filled on the host in one place (optimized/kernel_args.h) from a validated BuildRequest.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/fast_divider.h"
#include "kernels/host_device.h"

namespace dsv4::opt {

// Reads one input element; on the device through the read-only data cache (inputs never
// alias outputs).
DSV4_HD DSV4_INLINE int32_t load_input(const int32_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// A paged cache's block table (SPEC §2): num_rows x blocks_per_row, row-major, dense.
struct BlockTableView {
  const int32_t* table;
  int32_t num_rows;
  int32_t blocks_per_row;  // NB
  int32_t block_size;      // B >= 1
  FastDivider block_divider;
  // The largest physical block id whose every slot (id * B + B - 1) fits int32: ids up to it
  // need neither the sign nor the overflow check, one unsigned compare covers both.
  uint32_t max_safe_block;

  // Host only; block_size >= 1 (validated before).
  static BlockTableView make(const int32_t* table, int32_t num_rows, int32_t blocks_per_row,
                             int32_t block_size) {
    const int32_t b = block_size < 1 ? 1 : block_size;
    return BlockTableView{table, num_rows, blocks_per_row, b, FastDivider::make(b),
                          static_cast<uint32_t>((int64_t{INT32_MAX} - (b - 1)) / b)};
  }

  // Row r of the table, for 0 <= r < num_rows: resolved once per row, not per column.
  DSV4_HD DSV4_INLINE const int32_t* row(int32_t r) const {
    return table + static_cast<int64_t>(r) * blocks_per_row;
  }

  // slot(r, i) = table[r][i / B] * B + i % B for i >= 0, given row_table = row(r). A block past
  // the table's width, a negative entry or a slot beyond int32 is a content error (SPEC §4):
  // -1, counted in *errors. Reads nothing outside row r of the table, whatever i is.
  DSV4_HD DSV4_INLINE int32_t slot_in_row(const int32_t* row_table, int32_t i, int32_t* errors) const {
    const uint32_t block = block_divider.divide(static_cast<uint32_t>(i));
    const uint32_t offset = static_cast<uint32_t>(i) - block * static_cast<uint32_t>(block_size);
    if (block >= static_cast<uint32_t>(blocks_per_row)) {
      ++*errors;
      return -1;
    }
    const int32_t physical = load_input(row_table + block);
    if (static_cast<uint32_t>(physical) <= max_safe_block) {  // the common case
      return static_cast<int32_t>(static_cast<uint32_t>(physical) * static_cast<uint32_t>(block_size) +
                                  offset);
    }
    const uint64_t value =
        uint64_t{static_cast<uint32_t>(physical)} * static_cast<uint32_t>(block_size) + offset;
    if (physical < 0 || value > uint64_t{INT32_MAX}) {
      ++*errors;
      return -1;
    }
    return static_cast<int32_t>(value);
  }

  DSV4_HD DSV4_INLINE int32_t slot(int32_t r, int32_t i, int32_t* errors) const {
    return slot_in_row(row(r), i, errors);
  }
};

struct MixedSparseIndicesArgs {
  int32_t window;  // W
  int32_t ratio;   // >= 1
  int32_t topk;
  int32_t num_requests;       // R
  int32_t num_tokens;         // T
  int32_t num_decode_tokens;  // D
  int32_t row_width;          // W + P

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

  BlockTableView swa;
  BlockTableView compressed;  // the SWA table when the request gives none

  int32_t* sparse_indices;              // T x row_width, dense
  int32_t* sparse_lens;                 // T
  unsigned long long* content_errors;   // device counter (CUDA kernels); unused on the host

  // 16-byte accesses are legal (decided once on the host from widths, strides and pointers).
  bool vector_stores;                   // W % 4 == 0 and sparse_indices 16-byte aligned
  bool decode_swa_vector_loads;         // ... and the decode SWA rows 16-byte aligned
  bool decode_compressed_vector_loads;  // decode_compressed rows 16-byte aligned
  bool prefill_topk_vector_loads;       // prefill_topk rows 16-byte aligned
};

static_assert(std::is_trivially_copyable_v<MixedSparseIndicesArgs> &&
                  std::is_standard_layout_v<MixedSparseIndicesArgs>,
              "kernel arguments must be a POD");

}  // namespace dsv4::opt
