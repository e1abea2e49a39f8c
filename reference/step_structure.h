// The structural checks (SPEC §4) that the builder and the per-step metadata (SPEC §6) share.
// Each throws std::invalid_argument naming the field, the row and the value; all are O(T + R).
#pragma once
#include <string>

#include "reference/tensors.h"

namespace dsv4::ref {

[[noreturn]] void reject(const std::string& message);

// query_start_loc has R + 1 entries, starts at 0, never decreases and ends at T; every
// token_to_req[t] is a request whose range holds t; seq_lens[r] >= its query length.
// R = seq_lens.size(), T = token_to_req.size().
void validate_step_structure(const IndexVector& query_start_loc, const IndexVector& seq_lens,
                             const IndexVector& token_to_req);

// The decode tokens are a prefix of whole requests: D <= T and D = query_start_loc[k] for some
// k. `name` says where D came from in messages (e.g. "num_decode_tokens").
void validate_decode_boundary(const IndexVector& query_start_loc, int32_t num_decode_tokens,
                              const std::string& name);

// block_size >= 1, block_span (when given) >= block_size, at least one table row per request
// (more are allowed: SPEC §7). `name` is the cache's field name ("swa").
void validate_paged_cache(const PagedCache& cache, const std::string& name, int32_t num_requests);

// A Step's layout (validate_step_structure, num_decode_tokens at a request boundary,
// decode_valid empty or of size D); its caches are checked by whoever reads them.
struct Step;
void validate_step(const Step& step);

}  // namespace dsv4::ref
