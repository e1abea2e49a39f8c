// SPEC §7 persistent buffers made from a step's exact-size inputs: every buffer grown to a
// capacity with garbage past the step (sentinel request ids -1 in the padding tokens, hostile
// values elsewhere), so that a path reading past T, D or R shows in its output; and the step's
// run-time sizes. The reference's output on the result is the step's, padded (metadata_checks.h).
#pragma once
#include <cstdint>
#include <random>

#include "reference/metadata_checks.h"

namespace dsv4::harness {

struct ExtraCapacity {
  int32_t tokens = 0, decode_rows = 0, prefill_rows = 0, requests = 0;  // tokens: at least decode_rows
};

struct PersistentBuild {
  ref::BuilderInputs inputs;  // capacities: T + extra tokens, D + extra decode rows, ...
  ref::RunTimeSizes sizes;    // the step's T, D, R
};
PersistentBuild with_capacity(const ref::BuilderInputs& step, const ExtraCapacity& extra, std::mt19937_64& rng);

// One metadata entry of a persistent build broken at random (token_to_req, query_start_loc,
// seq_lens, the sizes, decode lens): what device-side validation must catch. Returns what it
// did, e.g. "seq_lens[2] = 99999".
std::string corrupt_metadata(PersistentBuild& build, std::mt19937_64& rng);

}  // namespace dsv4::harness
