// Copies reference tensors into one backend's memory and hands out optimized-path views of
// them; owns the buffers. Shared by BackendStep (a whole step) and StagedRequest (one build).
#pragma once
#include <vector>

#include "harness/input_layout.h"
#include "optimized/backend_buffer.h"
#include "optimized/build_request.h"
#include "reference/tensors.h"

namespace dsv4::harness {

// `m` as `layout` places it in memory: `misalign` int32 before the first row, rows
// cols + row_padding apart, -77 (which no path may read) in the gaps.
std::vector<int32_t> strided_image(const ref::IndexMatrix& m, MatrixLayout layout);

class BackendUploads {
 public:
  explicit BackendUploads(opt::Backend backend) : backend_(backend) {}
  opt::Backend backend() const { return backend_; }

  // Never null, even for no elements: a given input stays given when it is empty.
  const int32_t* ints(const int32_t* data, Eigen::Index count);
  const uint8_t* bytes(const std::vector<uint8_t>& data);
  // Padding between rows and before the base hold -77, which no path may read.
  opt::Int32Matrix matrix(const ref::IndexMatrix& m, MatrixLayout layout = {});
  // The table's rows `row_padding` apart beyond its width, and `extra_rows` rows past R (a
  // persistent [max_num_reqs][max_blocks] table, SPEC §7); -77 in the gaps and extra rows.
  opt::PagedCacheView cache(const ref::PagedCache& cache, int32_t row_padding = 0, int32_t extra_rows = 0);
  // A buffer of `count` int32 filled with `fill`, for outputs and status words.
  int32_t* scratch(size_t count, int32_t fill);

 private:
  opt::Backend backend_;
  std::vector<opt::BackendBuffer> buffers_;  // moving a BackendBuffer keeps its data pointer
};

}  // namespace dsv4::harness
