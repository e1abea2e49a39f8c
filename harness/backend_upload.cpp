#include "harness/backend_upload.h"

#include <algorithm>

namespace dsv4::harness {

std::vector<int32_t> strided_image(const ref::IndexMatrix& m, MatrixLayout layout) {
  const Eigen::Index stride = m.cols() + layout.row_padding;
  std::vector<int32_t> host(static_cast<size_t>(layout.misalign + m.rows() * stride), -77);
  for (Eigen::Index i = 0; i < m.rows(); ++i)  // row-major: each row is contiguous
    std::copy_n(m.data() + i * m.cols(), m.cols(), host.begin() + layout.misalign + i * stride);
  return host;
}

const int32_t* BackendUploads::ints(const int32_t* data, Eigen::Index count) {
  std::vector<int32_t> host(data, data + count);
  host.push_back(0);
  buffers_.push_back(opt::BackendBuffer::upload(backend_, host));
  return static_cast<const int32_t*>(buffers_.back().data());
}

const uint8_t* BackendUploads::bytes(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> host = data;
  host.push_back(1);
  buffers_.push_back(opt::BackendBuffer::upload(backend_, host));
  return static_cast<const uint8_t*>(buffers_.back().data());
}

opt::Int32Matrix BackendUploads::matrix(const ref::IndexMatrix& m, MatrixLayout layout) {
  opt::Int32Matrix view;
  view.rows = static_cast<int32_t>(m.rows());
  view.cols = static_cast<int32_t>(m.cols());
  view.row_stride = m.cols() + layout.row_padding;
  const std::vector<int32_t> host = strided_image(m, layout);
  view.data = ints(host.data(), static_cast<Eigen::Index>(host.size())) + layout.misalign;
  return view;
}

opt::PagedCacheView BackendUploads::cache(const ref::PagedCache& cache, int32_t row_padding, int32_t extra_rows) {
  opt::PagedCacheView view;
  ref::IndexMatrix rows = ref::IndexMatrix::Constant(cache.block_table.rows() + extra_rows, cache.block_table.cols(), -77);
  rows.topRows(cache.block_table.rows()) = cache.block_table;
  const opt::Int32Matrix table = matrix(rows, MatrixLayout{row_padding, 0});
  view.num_rows = table.rows;
  view.blocks_per_row = table.cols;
  view.row_stride = row_padding != 0 ? table.row_stride : 0;  // 0: dense, the default
  view.block_size = cache.block_size;
  view.block_span = cache.span();
  view.base_offset = cache.base_offset;
  view.block_table = table.data;
  return view;
}

int32_t* BackendUploads::scratch(size_t count, int32_t fill) {
  const std::vector<int32_t> host(count + 1, fill);
  buffers_.push_back(opt::BackendBuffer::upload(backend_, host));
  return static_cast<int32_t*>(buffers_.back().data());
}

}  // namespace dsv4::harness
