// Step shapes that several tests drive through the per-layer entry point.
#pragma once
#include <cstdint>

#include "harness/step_factory.h"

namespace dsv4::testing {

// A small mixed step: 3 decode requests of 2 tokens (speculative decoding) at 900 tokens of
// context, and 2 prefills of 9 tokens after 700.
inline harness::StepShape small_mixed_shape(uint64_t seed = 1) {
  harness::StepShape shape;
  shape.num_decodes = 3;
  shape.decode_tokens_each = 2;
  shape.decode_context = 900;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 9;
  shape.prefill_context = 700;
  shape.seed = seed;
  return shape;
}

}  // namespace dsv4::testing
