// SPEC §7 persistent buffers made from a step's exact-size inputs: every buffer grown to a
// capacity with garbage past the step (sentinel request ids -1 in the padding tokens, hostile
// values elsewhere), so that a path reading past T, D or R shows in its output; and the step's
// run-time sizes. The reference's output on the result is the step's, padded (metadata_checks.h).
#pragma once
#include <cstdint>
#include <random>

#include "harness/step_case.h"
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

// The C128A effective width E of a step (SPEC §6), without building its metadata.
int32_t c128a_effective_width(const ref::Step& step);

// How far a whole step's persistent buffers reach past the live step (SPEC §7).
struct StepCapacity {
  int32_t extra_tokens = 0;        // T_cap - T: padded rows
  int32_t extra_decode_rows = 0;   // D_cap - D, at most extra_tokens (D_cap <= T_cap)
  int32_t extra_prefill_rows = 0;  // prefill matrix rows past T - D
  int32_t extra_requests = 0;      // R_cap - R
  int32_t extra_table_rows = 0;    // block-table rows past R_cap (a [max_num_reqs][max_blocks] table)
  int32_t c128a_extra_columns = 0; // P_cap - E
  int32_t output_row_padding = 0;  // caller-owned output rows this much wider (a multiple of 4)
};

// Puts `c`'s step into persistent buffers (c.persistent) grown by `extra`, with stale contents
// drawn from `seed` past every size and sentinel request ids -1 in the padded rows; grows the
// step's block tables by extra_requests + extra_table_rows rows of valid-looking block ids (an
// engine's other requests: reading them gives plausible slots).
void make_persistent(StepCase& c, const StepCapacity& extra, uint64_t seed);

// One metadata entry of a persistent build broken at random (token_to_req, query_start_loc,
// seq_lens, the sizes, decode lens): what device-side validation must catch. Returns what it
// did, e.g. "seq_lens[2] = 99999".
std::string corrupt_metadata(PersistentBuild& build, std::mt19937_64& rng);
// The same for a whole step's persistent buffers (the live step is left as it was): what the
// status words of a replayed StepGraph must name like the reference's.
std::string corrupt_metadata(PersistentStep& step, std::mt19937_64& rng);

}  // namespace dsv4::harness
