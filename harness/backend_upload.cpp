#include "harness/backend_upload.h"

namespace dsv4::harness {

const int32_t* BackendUploads::ints(const int32_t* data, Eigen::Index count) {
  buffers_.push_back(opt::BackendBuffer::upload(backend_, std::vector<int32_t>(data, data + count)));
  return static_cast<const int32_t*>(buffers_.back().data());
}

const uint8_t* BackendUploads::bytes(const std::vector<uint8_t>& data) {
  buffers_.push_back(opt::BackendBuffer::upload(backend_, data));
  return static_cast<const uint8_t*>(buffers_.back().data());
}

opt::Int32Matrix BackendUploads::matrix(const ref::IndexMatrix& m) {
  opt::Int32Matrix view;
  view.rows = static_cast<int32_t>(m.rows());
  view.cols = static_cast<int32_t>(m.cols());
  view.row_stride = m.cols();
  view.data = ints(m.data(), m.size());
  return view;
}

opt::PagedCacheView BackendUploads::cache(const ref::PagedCache& cache) {
  opt::PagedCacheView view;
  view.num_rows = static_cast<int32_t>(cache.block_table.rows());
  view.blocks_per_row = static_cast<int32_t>(cache.block_table.cols());
  view.block_size = cache.block_size;
  view.block_table = ints(cache.block_table.data(), cache.block_table.size());
  return view;
}

}  // namespace dsv4::harness
