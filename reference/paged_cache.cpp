// slot(r, i) of SPEC §2, answering -1 instead of reading outside the table.
#include "reference/paged_cache.h"

#include <limits>

namespace dsv4::ref {

int32_t paged_slot(const PagedCache& cache, int32_t r, int32_t i) {
  const int32_t block = i / cache.block_size;
  if (block >= cache.block_table.cols()) return -1;  // past the table's width
  const int32_t physical_block = cache.block_table(r, block);
  if (physical_block < 0) return -1;  // unassigned block
  const int64_t slot = int64_t{physical_block} * cache.block_size + i % cache.block_size;
  if (slot > std::numeric_limits<int32_t>::max()) return -1;  // not addressable as int32
  return static_cast<int32_t>(slot);
}

}  // namespace dsv4::ref
