// The inputs of one build (SPEC §3) as non-owning views into the backend's memory
// (host memory for the host backend, device memory for the CUDA backend).
#pragma once
#include <cstdint>

namespace dsv4::opt {

// Row-major int32 matrix view; rows x cols, row r starts at data + r * row_stride.
struct Int32Matrix {
  const int32_t* data = nullptr;
  int32_t rows = 0;
  int32_t cols = 0;
  int64_t row_stride = 0;  // elements
};

struct PagedCacheView {
  const int32_t* block_table = nullptr;  // num_rows x blocks_per_row, row-major, dense
  int32_t num_rows = 0;
  int32_t blocks_per_row = 0;  // NB
  int32_t block_size = 0;      // B
};

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
  int32_t* sparse_indices = nullptr;  // num_tokens x width, row-major, dense
  int32_t* sparse_lens = nullptr;     // num_tokens
  int32_t num_tokens = 0;
  int32_t width = 0;                  // W + P
};

// P = round_up(max(topk, Kd), 4).
constexpr int32_t padded_compressed_width(int32_t topk, int32_t decode_width) {
  const int32_t m = topk > decode_width ? topk : decode_width;
  return (m + 3) / 4 * 4;
}

}  // namespace dsv4::opt
