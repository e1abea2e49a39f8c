#include "harness/staged_request.h"

namespace dsv4::harness {

StagedRequest::StagedRequest(opt::Backend backend, const ref::BuilderInputs& in) {
  auto upload_ints = [&](const int32_t* data, Eigen::Index count) {
    buffers_.push_back(opt::BackendBuffer::upload(backend, std::vector<int32_t>(data, data + count)));
    return static_cast<const int32_t*>(buffers_.back().data());
  };
  auto upload_matrix = [&](const ref::IndexMatrix& m) {
    opt::Int32Matrix view;
    view.rows = static_cast<int32_t>(m.rows());
    view.cols = static_cast<int32_t>(m.cols());
    view.row_stride = m.cols();
    view.data = upload_ints(m.data(), m.size());
    return view;
  };
  auto upload_cache = [&](const ref::PagedCache& cache) {
    opt::PagedCacheView view;
    view.num_rows = static_cast<int32_t>(cache.block_table.rows());
    view.blocks_per_row = static_cast<int32_t>(cache.block_table.cols());
    view.block_size = cache.block_size;
    view.block_table = upload_ints(cache.block_table.data(), cache.block_table.size());
    return view;
  };

  host_query_start_loc_.assign(in.query_start_loc.data(), in.query_start_loc.data() + in.query_start_loc.size());
  host_seq_lens_.assign(in.seq_lens.data(), in.seq_lens.data() + in.seq_lens.size());
  host_token_to_req_.assign(in.token_to_req.data(), in.token_to_req.data() + in.token_to_req.size());

  opt::BuildRequest& r = request_;
  r.window = in.window;
  r.ratio = in.ratio;
  r.topk = in.topk;
  r.num_requests = static_cast<int32_t>(in.seq_lens.size());
  r.num_tokens = static_cast<int32_t>(in.token_to_req.size());
  r.num_decode_tokens = static_cast<int32_t>(in.decode_swa_indices.rows());
  r.decode_swa_indices = upload_matrix(in.decode_swa_indices);
  r.decode_compressed = upload_matrix(in.decode_compressed);
  r.decode_local = in.decode_local;
  if (in.decode_compressed_lens)
    r.decode_compressed_lens = upload_ints(in.decode_compressed_lens->data(), in.decode_compressed_lens->size());
  if (in.decode_valid) {
    buffers_.push_back(opt::BackendBuffer::upload(backend, *in.decode_valid));
    r.decode_valid = static_cast<const uint8_t*>(buffers_.back().data());
  }
  r.prefill_topk = upload_matrix(in.prefill_topk);
  r.query_start_loc = upload_ints(in.query_start_loc.data(), in.query_start_loc.size());
  r.seq_lens = upload_ints(in.seq_lens.data(), in.seq_lens.size());
  r.token_to_req = upload_ints(in.token_to_req.data(), in.token_to_req.size());
  r.swa = upload_cache(in.swa);
  if (in.compressed) r.compressed = upload_cache(*in.compressed);
}

opt::StepStructureHost StagedRequest::host() const {
  return {host_query_start_loc_.data(), host_seq_lens_.data(), host_token_to_req_.data()};
}

}  // namespace dsv4::harness
