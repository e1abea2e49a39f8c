#include "harness/staged_request.h"

namespace dsv4::harness {

StagedRequest::StagedRequest(opt::Backend backend, const ref::BuilderInputs& in, const RequestLayout& layout)
    : uploads_(backend) {
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
  r.decode_swa_indices = uploads_.matrix(in.decode_swa_indices, layout.decode_swa_indices);
  r.decode_compressed = uploads_.matrix(in.decode_compressed, layout.decode_compressed);
  r.decode_local = in.decode_local;
  if (in.decode_compressed_lens)
    r.decode_compressed_lens = uploads_.ints(in.decode_compressed_lens->data(), in.decode_compressed_lens->size());
  if (in.decode_valid) r.decode_valid = uploads_.bytes(*in.decode_valid);
  r.prefill_topk = uploads_.matrix(in.prefill_topk, layout.prefill_topk);
  r.query_start_loc = uploads_.ints(in.query_start_loc.data(), in.query_start_loc.size());
  r.seq_lens = uploads_.ints(in.seq_lens.data(), in.seq_lens.size());
  r.token_to_req = uploads_.ints(in.token_to_req.data(), in.token_to_req.size());
  r.swa = uploads_.cache(in.swa);
  if (in.compressed) r.compressed = uploads_.cache(*in.compressed);
}

opt::StepStructureHost StagedRequest::host() const {
  return {host_query_start_loc_.data(), host_seq_lens_.data(), host_token_to_req_.data()};
}

}  // namespace dsv4::harness
