// The inputs of one build (SPEC §3) as non-owning views into the backend's memory
// (host memory for the host backend, device memory for the CUDA backend).
#pragma once
#include <cstdint>

#include "kernels/step_sizes.h"
#include "kernels/token_plan.h"

namespace dsv4::opt {

using kernels::MetadataCheck;
using kernels::MetadataStatus;
using kernels::StepSizes;
using kernels::TokenPlanEntry;

// Row-major int32 matrix view; rows x cols, row r starts at data + r * row_stride.
struct Int32Matrix {
  const int32_t* data = nullptr;
  int32_t rows = 0;
  int32_t cols = 0;
  int64_t row_stride = 0;  // elements
};

// slot(r, i) = base_offset + block_table[r * row_stride + i / B] * S + i % B (SPEC §2, §7).
struct PagedCacheView {
  const int32_t* block_table = nullptr;  // num_rows x blocks_per_row, row-major
  int32_t num_rows = 0;        // >= R: a persistent table's rows past R are never read
  int32_t blocks_per_row = 0;  // NB
  int32_t block_size = 0;      // B
  int64_t row_stride = 0;      // elements, >= NB; 0 = NB (dense)
  int32_t block_span = 0;      // S >= B; 0 = B
  int32_t base_offset = 0;     // O
};

// Caller-owned outputs (SPEC §7): row_capacity rows of row_stride int32, 16-byte aligned,
// row_stride >= W + P_cap and a multiple of 4; lens row_capacity entries.
struct OutputView {
  int32_t* sparse_indices = nullptr;  // null: the builder's workspace
  int64_t row_stride = 0;
  int32_t* sparse_lens = nullptr;
  // With write_token_plan: T entries, 8-byte aligned (null: the workspace, which needs
  // sparse_indices null too).
  TokenPlanEntry* token_plan = nullptr;
};

// SPEC §8: which part of every combined row [0, W + P_cap) a build writes. A mode is this
// value, not another builder: one row function serves them all.
enum class RowPart : uint8_t {
  kWhole,       // every column, and sparse_lens (SPEC §3)
  kWindow,      // columns [0, W) only, no lens: the split form's shared SWA segment (a request
                // with P = 0), or the SWA columns of a tail-only C4A buffer (W + P_cap wide)
  kCompressed,  // columns [W, W + P_cap) written at [0, P_cap) of a P_cap-wide output, lens =
                // sparse_lens - W: the split form's compressed segment
  kTail,        // columns [W, W + P_cap) and sparse_lens into `output`, a combined buffer whose
                // window columns an earlier build of the step wrote (tail-only C4A builds)
};
const char* row_part_name(RowPart part);  // "whole", "window", "compressed", "tail"

struct BuildRequest {
  int32_t window = 0;  // W
  int32_t ratio = 1;
  int32_t topk = 0;

  int32_t num_requests = 0;       // R
  int32_t num_tokens = 0;         // T
  int32_t num_decode_tokens = 0;  // D

  Int32Matrix decode_swa_indices;           // D x W
  Int32Matrix decode_compressed;            // D x Kd (cols 0 = absent)
  bool decode_local = false;
  const int32_t* decode_compressed_lens = nullptr;  // D or null (global form only)
  const uint8_t* decode_valid = nullptr;            // D or null = all valid (local form only)
  Int32Matrix prefill_topk;                 // (T-D) x Kp

  const int32_t* query_start_loc = nullptr;  // R+1
  const int32_t* seq_lens = nullptr;         // R
  const int32_t* token_to_req = nullptr;     // T

  PagedCacheView swa;
  PagedCacheView compressed;  // block_table null: the SWA cache is used

  // SPEC §7. Capacities: rows [T, T_cap) are padding (-1, length 0), columns [W + P,
  // W + P_cap) are -1; 0 means T and P.
  int32_t row_capacity = 0;         // T_cap
  int32_t compressed_capacity = 0;  // P_cap
  OutputView output;
  // Run-time sizes (device memory for CUDA, host memory for the host backend): T, D and R
  // are read when the build runs. num_tokens, num_decode_tokens and num_requests above are
  // then the capacities (rows of token_to_req and the output, of the decode matrices, of
  // seq_lens and the tables); prefill_topk may have any rows (T - D is checked against
  // them). Rows whose metadata breaks the SPEC §4 checks are written -1 with length 0.
  const StepSizes* run_time_sizes = nullptr;
  // With run_time_sizes: the build also writes the status of the step's metadata here (same
  // memory as the sizes), overwriting what was there.
  MetadataStatus* status = nullptr;
  // SPEC §8 (with SPEC §7's padding rows and run-time sizes too: a row not built has length 0
  // in every part that writes lengths).
  RowPart part = RowPart::kWhole;
  // The per-step token plan (kernels/token_plan.h; host-sized steps only). token_plan: T
  // entries (8-byte aligned) that an earlier build of this step wrote, over the same
  // query_start_loc, seq_lens and token_to_req: each prefill row takes its request and
  // position from there instead (one dependent read instead of two). A plan of another step
  // gives wrong indices, never a read outside the inputs. write_token_plan: the build writes
  // the plan of its prefill rows [D, T) to output.token_plan, or to its workspace
  // (BuiltIndices::token_plan).
  const TokenPlanEntry* token_plan = nullptr;
  bool write_token_plan = false;
};

// Host copies of the step's structural metadata: what the once-per-step validation reads.
struct StepStructureHost {
  const int32_t* query_start_loc = nullptr;  // R+1
  const int32_t* seq_lens = nullptr;         // R
  const int32_t* token_to_req = nullptr;     // T
};

// The output of one build, in the backend's memory; valid until the builder's
// release_outputs() (the end of the step).
struct BuiltIndices {
  int32_t* sparse_indices = nullptr;  // num_tokens x width, row r at r * row_stride
  int32_t* sparse_lens = nullptr;     // num_tokens
  int32_t num_tokens = 0;             // rows: T_cap
  int32_t width = 0;                  // W + P_cap
  int64_t row_stride = 0;             // elements
  TokenPlanEntry* token_plan = nullptr;  // the plan the build wrote (write_token_plan), else null
};

// P = round_up(max(topk, Kd), 4).
constexpr int32_t padded_compressed_width(int32_t topk, int32_t decode_width) {
  const int32_t m = topk > decode_width ? topk : decode_width;
  return (m + 3) / 4 * 4;
}
// W + P_cap and T_cap of a validated request.
constexpr int32_t output_width(const BuildRequest& r) {
  return r.window + (r.compressed_capacity > 0 ? r.compressed_capacity
                                               : padded_compressed_width(r.topk, r.decode_compressed.cols));
}
// The columns of one output row of r's part: P_cap for the split compressed segment, else
// W + P_cap (a window or tail build writes part of a combined row).
constexpr int32_t part_output_width(const BuildRequest& r) {
  return r.part == RowPart::kCompressed ? output_width(r) - r.window : output_width(r);
}
constexpr int32_t output_rows(const BuildRequest& r) {
  return r.row_capacity > 0 ? r.row_capacity : r.num_tokens;
}

}  // namespace dsv4::opt
