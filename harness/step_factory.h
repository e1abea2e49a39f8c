// Deterministic realistic steps of a given shape (SPEC §6), for benchmarks, hand tests and
// the main job. The RapidCheck generators (generators.h) cover the random space.
#pragma once
#include <cstdint>
#include <vector>

#include "reference/model_schedule.h"

namespace dsv4::harness {

// A step: `num_decodes` decode requests of `decode_tokens_each` tokens at `decode_context`
// tokens of context each, then `num_prefills` prefill chunks of `prefill_tokens_each` tokens
// after `prefill_context` tokens of prior context. Block tables are random permutations of
// physical blocks (seeded), with unused tail entries.
struct StepShape {
  int32_t num_decodes = 0;
  int32_t decode_tokens_each = 1;
  int32_t decode_context = 0;     // seq_len of each decode request, this step's tokens included
  int32_t num_prefills = 0;
  int32_t prefill_tokens_each = 0;
  int32_t prefill_context = 0;    // prior context of each prefill request
  int32_t swa_block_size = 64;
  int32_t main_block_size = 256;
  int32_t max_model_len = 1 << 20;
  uint64_t seed = 1;
};

ref::Step make_step(const StepShape& shape);

// Plausible C4A indexer outputs for every C4A layer of `schedule` (entries of other layers
// empty): per token min(topk, (pos+1)/4) distinct local indices in [0, (pos+1)/4), -1 padded.
std::vector<ref::C4aIndexerOutput> make_c4a_indexer_outputs(const ref::Step& step,
                                                            const ref::ModelSchedule& schedule,
                                                            uint64_t seed);

}  // namespace dsv4::harness
