// The one comparison of a build with the reference's, exact: sparse_indices and sparse_lens
// element for element, and the content-error count. Used by the differential check, the
// tests' assertions (which wrap it) and the benchmarks' check of what they time.
#pragma once
#include <vector>

#include "harness/backend_step.h"
#include "harness/mismatch.h"
#include "reference/mixed_sparse_indices.h"

namespace dsv4::harness {

// At most one mismatch per tensor (its first differing element, with how many differ), a
// "shape" mismatch instead when the shapes differ, and one for the error count; none when
// the build equals the reference's. Every mismatch starts as a copy of `where` (backend,
// path, layer, kind, window); tokens below `num_decode_tokens` are named decode tokens.
std::vector<Mismatch> compare_build(const ref::BuilderOutput& want, const HostIndices& got, int64_t got_errors,
                                    int32_t num_decode_tokens, const Mismatch& where);

}  // namespace dsv4::harness
