// The oracle: build_mixed_sparse_indices exactly as SPEC §3, validated as SPEC §4.
#pragma once
#include <optional>

#include "reference/tensors.h"

namespace dsv4::ref {

// Inputs of one build (SPEC §3). D = decode_swa_indices.rows(), T = token_to_req.size(),
// R = seq_lens.size().
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
};

struct BuilderOutput {
  IndexMatrix sparse_indices;   // T x (W + P), every element written
  IndexVector sparse_lens;      // T
  int64_t content_errors = 0;   // SPEC §4 content errors, each written as -1
};

// P = round_up(max(topk, Kd), 4).
int32_t padded_compressed_width(int32_t topk, int32_t decode_width);

// Throws std::invalid_argument naming field, row and value on any structural error
// (SPEC §4); on success returns nothing and has written nothing.
void validate_builder_inputs(const BuilderInputs& in);

// Validates, then builds. Content errors are written as -1 and counted.
BuilderOutput build_mixed_sparse_indices(const BuilderInputs& in);

}  // namespace dsv4::ref
