// The one paged-cache lookup of the reference (SPEC §2), used by the builder and the metadata.
#pragma once
#include "reference/tensors.h"

namespace dsv4::ref {

// slot(r, i) = block_table(r, i / B) * B + i % B, or -1 when the cache cannot answer: block
// i / B at or past the table's width NB, a negative table entry, or a slot beyond int32 (the
// product is formed in int64). The builder counts each -1 as a content error (SPEC §4).
// Preconditions (checked by the callers' validation): 0 <= r < rows, i >= 0, B >= 1.
int32_t paged_slot(const PagedCache& cache, int32_t r, int32_t i);

}  // namespace dsv4::ref
