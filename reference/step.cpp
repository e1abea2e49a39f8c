// Positions (SPEC §2) and the layout check of a Step.
#include "reference/step.h"

#include "reference/step_structure.h"

namespace dsv4::ref {

void validate_step(const Step& step) {
  validate_step_structure(step.query_start_loc, step.seq_lens, step.token_to_req);
  validate_decode_boundary(step.query_start_loc, step.num_decode_tokens, "num_decode_tokens");
  if (!step.decode_valid.empty() &&
      step.decode_valid.size() != static_cast<size_t>(step.num_decode_tokens)) {
    reject("decode_valid has size " + std::to_string(step.decode_valid.size()) +
           ", expected num_decode_tokens = " + std::to_string(step.num_decode_tokens) +
           " (or empty: all valid)");
  }
}

int32_t token_position(const Step& step, int32_t t) {
  const int32_t T = step.num_tokens();
  const int32_t R = step.num_requests();
  if (t < 0 || t >= T) {
    reject("token_position: t = " + std::to_string(t) + " outside [0, T = " + std::to_string(T) + ")");
  }
  const int32_t r = step.token_to_req(t);
  if (r < 0 || r >= R || step.query_start_loc.size() != R + 1) {
    reject("token_position: token_to_req[" + std::to_string(t) + "] = " + std::to_string(r) +
           " is not a request of query_start_loc (R = " + std::to_string(R) + ")");
  }
  const int32_t query_length = step.query_start_loc(r + 1) - step.query_start_loc(r);
  return step.seq_lens(r) - query_length + (t - step.query_start_loc(r));
}

}  // namespace dsv4::ref
