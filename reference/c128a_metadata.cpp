// SPEC §6 C128A metadata: every compressed token so far, capped at the step's effective width E.
#include <algorithm>

#include "reference/paged_cache.h"
#include "reference/step.h"
#include "reference/step_structure.h"

namespace dsv4::ref {

namespace {
constexpr int64_t kRatio = 128;
int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }
}  // namespace

int32_t c128a_effective_width(int32_t max_pos, int32_t max_model_len) {
  if (max_model_len < 1) reject("max_model_len = " + std::to_string(max_model_len) + ": must be >= 1");
  if (max_pos < -1) reject("max_pos = " + std::to_string(max_pos) + ": must be >= -1 (-1: T = 0)");
  const int64_t max_compressed = round_up((int64_t{max_model_len} + kRatio - 1) / kRatio, 128);
  const int64_t needed = round_up(std::max<int64_t>((int64_t{max_pos} + 1) / kRatio, 1), 128);
  return static_cast<int32_t>(std::min(max_compressed, needed));
}

// Decode global slots that fall outside the c128a table (block past its width, negative
// entry) are written -1; the count n(t) is still reported in decode_lens.
C128aMetadata c128a_metadata(const Step& step) {
  validate_step(step);
  validate_paged_cache(step.c128a, "c128a", step.num_requests());
  const int32_t T = step.num_tokens();
  const int32_t D = step.num_decode_tokens;
  int32_t max_pos = -1;
  for (int32_t t = 0; t < T; ++t) max_pos = std::max(max_pos, token_position(step, t));

  C128aMetadata meta;
  const int32_t E = c128a_effective_width(max_pos, step.max_model_len);
  meta.effective_width = E;
  // n(t): compressed tokens so far, capped at E.
  auto count = [&](int32_t t) {
    return static_cast<int32_t>(std::min<int64_t>((int64_t{token_position(step, t)} + 1) / kRatio, E));
  };

  meta.decode_global = IndexMatrix::Constant(D, E, -1);
  meta.decode_lens = IndexVector::Zero(D);
  for (int32_t t = 0; t < D; ++t) {
    const bool padding = !step.decode_valid.empty() && step.decode_valid[static_cast<size_t>(t)] == 0;
    if (padding) continue;  // lens 0, row all -1
    const int32_t r = step.token_to_req(t);
    const int32_t n = count(t);
    for (int32_t j = 0; j < n; ++j) meta.decode_global(t, j) = paged_slot(step.c128a, r, j);
    meta.decode_lens(t) = n;
  }

  meta.prefill_local = IndexMatrix::Constant(T - D, E, -1);
  for (int32_t t = D; t < T; ++t) {
    const int32_t n = count(t);
    for (int32_t j = 0; j < n; ++j) meta.prefill_local(t - D, j) = j;
  }
  return meta;
}

}  // namespace dsv4::ref
