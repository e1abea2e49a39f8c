// Integer tensors of the reference: Eigen, row-major like the engine's tensors.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace dsv4::ref {

using IndexMatrix = Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using IndexVector = Eigen::Matrix<int32_t, Eigen::Dynamic, 1>;

// A paged cache: block_table[r][j] is the physical block of request r's logical block j.
struct PagedCache {
  IndexMatrix block_table;    // R x NB
  int32_t block_size = 0;     // tokens per block (B)
};

}  // namespace dsv4::ref
