// SPEC §6 decode SWA indices: the last min(p + 1, W) positions of each decode token's window.
#include <algorithm>

#include "reference/paged_cache.h"
#include "reference/step.h"
#include "reference/step_structure.h"

namespace dsv4::ref {

// A slot the SWA table cannot answer (block past its width, negative entry) is written -1,
// like the builder does; the metadata has no error count of its own.
IndexMatrix decode_swa_indices(const Step& step, int32_t window) {
  if (window < 1) reject("window = " + std::to_string(window) + ": must be >= 1");
  validate_step(step);
  validate_paged_cache(step.swa, "swa", step.num_requests());
  const int32_t D = step.num_decode_tokens;
  IndexMatrix indices = IndexMatrix::Constant(D, window, -1);
  for (int32_t t = 0; t < D; ++t) {
    const bool padding = !step.decode_valid.empty() && step.decode_valid[static_cast<size_t>(t)] == 0;
    if (padding) continue;  // row stays all -1
    const int32_t r = step.token_to_req(t);
    const int32_t p = token_position(step, t);
    const int32_t swa_len = std::min(p + 1, window);
    for (int32_t c = 0; c < swa_len; ++c) indices(t, c) = paged_slot(step.swa, r, p - swa_len + 1 + c);
  }
  return indices;
}

}  // namespace dsv4::ref
