// The one paged-cache lookup of the reference (SPEC §2), used by the builder and the metadata.
#pragma once
#include <limits>

#include "reference/tensors.h"

namespace dsv4::ref {

// slot(r, i) = O + block_table(r, i / B) * S + i % B (SPEC §2, §7), or -1 when the cache cannot
// answer: block i / B at or past the table's width NB, a negative table entry, or a slot
// outside [0, 2^31) (formed in int64; the base offset alone may take it there). The builder
// counts each -1 as a content error (SPEC §4).
// Preconditions (checked by the callers' validation): 0 <= r < rows, i >= 0, B >= 1.
// Inline: it runs once per output element, 67M times for an 8K x 8K build.
inline int32_t paged_slot(const PagedCache& cache, int32_t r, int32_t i) {
  const int32_t block = i / cache.block_size;
  if (block >= cache.block_table.cols()) return -1;  // past the table's width
  const int32_t physical_block = cache.block_table(r, block);
  if (physical_block < 0) return -1;  // unassigned block
  const int64_t slot =
      int64_t{cache.base_offset} + int64_t{physical_block} * cache.span() + i % cache.block_size;
  if (slot < 0 || slot > std::numeric_limits<int32_t>::max()) return -1;  // not an int32 slot
  return static_cast<int32_t>(slot);
}

}  // namespace dsv4::ref
