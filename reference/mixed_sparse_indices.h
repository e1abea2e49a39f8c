// The oracle: build_mixed_sparse_indices exactly as SPEC §3, validated as SPEC §4.
#pragma once
#include <functional>
#include <optional>

#include "reference/tensors.h"

namespace dsv4::ref {

// Inputs of one build (SPEC §3). D = decode_swa_indices.rows(), T = token_to_req.size(),
// R = seq_lens.size(). (With run-time sizes, metadata_checks.h, these are capacities.)
struct BuilderInputs {
  int32_t window = 0;  // W
  int32_t ratio = 1;
  int32_t topk = 0;    // prefill top-k count

  IndexMatrix decode_swa_indices;   // D x W, -1 = no entry
  IndexMatrix decode_compressed;    // D x Kd; 0 columns = absent
  bool decode_local = false;        // true: local compressed indices to translate
  std::optional<IndexVector> decode_compressed_lens;  // D, global form only
  std::optional<std::vector<uint8_t>> decode_valid;   // D, local form only (0 = padding)

  IndexMatrix prefill_topk;         // (T-D) x Kp, local compressed indices, -1 = none

  IndexVector query_start_loc;      // R+1
  IndexVector seq_lens;             // R
  IndexVector token_to_req;         // T

  PagedCache swa;                           // indexed by token position
  std::optional<PagedCache> compressed;     // indexed by local compressed index; absent: swa

  // SPEC §7 capacities fixed at capture: T_cap >= T output rows (rows [T, T_cap) are padding:
  // -1, length 0) and P_cap >= P compressed columns (columns [W + P, W + P_cap) are -1).
  std::optional<int32_t> row_capacity;         // T_cap; absent: T
  std::optional<int32_t> compressed_capacity;  // P_cap; absent: P
};

struct BuilderOutput {
  IndexMatrix sparse_indices;   // T_cap x (W + P_cap), every element written
  IndexVector sparse_lens;      // T_cap
  int64_t content_errors = 0;   // SPEC §4 content errors, each written as -1
};

// P = round_up(max(topk, Kd), 4).
int32_t padded_compressed_width(int32_t topk, int32_t decode_width);

// Throws std::invalid_argument naming field, row and value on any structural error
// (SPEC §4); on success returns nothing and has written nothing.
void validate_builder_inputs(const BuilderInputs& in);
// The part of it that does not read the metadata's values: scalars, capacities, cache and
// matrix shapes. run_time_sizes (SPEC §7): the buffers are capacities (prefill_topk any rows,
// row_capacity, if given, equal to token_to_req's size).
void validate_builder_shapes(const BuilderInputs& in, bool run_time_sizes);

// Validates, then builds. Content errors are written as -1 and counted.
BuilderOutput build_mixed_sparse_indices(const BuilderInputs& in);

// The output width W + P_cap of a validated `in`.
int32_t output_width(const BuilderInputs& in);

// The build without validation, for the run-time-sizes mode (metadata_checks.h): rows t < T
// with build_row(t) true follow SPEC §3 with D decode tokens; every other row of [0, rows) is
// written -1 with length 0 and reads nothing.
BuilderOutput build_rows(const BuilderInputs& in, int32_t rows, int32_t T, int32_t D,
                         const std::function<bool(int32_t)>& build_row);

}  // namespace dsv4::ref
