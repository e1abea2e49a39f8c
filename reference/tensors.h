// Integer tensors of the reference: Eigen, row-major like the engine's tensors.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dsv4::ref {

using IndexMatrix = Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using IndexVector = Eigen::Matrix<int32_t, Eigen::Dynamic, 1>;

// A paged cache: block_table[r][j] is the physical block of request r's logical block j.
// slot(r, i) = base_offset + block_table[r][i / B] * S + i % B (SPEC §2, §7).
struct PagedCache {
  PagedCache() = default;
  PagedCache(IndexMatrix table, int32_t size) : block_table(std::move(table)), block_size(size) {}

  IndexMatrix block_table;    // at least R rows (rows >= R are never read) x NB
  int32_t block_size = 0;     // tokens per block (B)
  // SPEC §7 storage-offset addressing of packed pools: the block span S >= B (absent: S = B)
  // and the base offset O.
  std::optional<int32_t> block_span;
  int32_t base_offset = 0;

  int32_t span() const { return block_span ? *block_span : block_size; }
  // Tokens one table row addresses: NB * B (a request's seq_len may not exceed it).
  int64_t row_capacity() const { return int64_t{block_table.cols()} * block_size; }
};

}  // namespace dsv4::ref
