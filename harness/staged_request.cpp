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
  r.swa = uploads_.cache(in.swa, layout.table_row_padding);
  if (in.compressed) r.compressed = uploads_.cache(*in.compressed, layout.table_row_padding);
  r.row_capacity = in.row_capacity.value_or(0);
  r.compressed_capacity = in.compressed_capacity.value_or(0);
  if (layout.caller_output) {
    r.output.row_stride = (opt::output_width(r) + 3) / 4 * 4 + layout.output_row_padding;  // 16-byte rows
    const auto rows = static_cast<size_t>(opt::output_rows(r));
    // 0x5a5a5a5a everywhere: what a build does not write stays visible.
    r.output.sparse_indices = uploads_.scratch(rows * static_cast<size_t>(r.output.row_stride) + 4, 0x5a5a5a5a);
    r.output.sparse_lens = uploads_.scratch(rows, 0x5a5a5a5a);
  }
}

StagedRequest::StagedRequest(opt::Backend backend, const ref::BuilderInputs& in, const RequestLayout& layout,
                             const ref::RunTimeSizes& sizes)
    : StagedRequest(backend, in, layout) {
  const int32_t host_sizes[3] = {sizes.num_tokens, sizes.num_decode_tokens, sizes.num_requests};
  request_.run_time_sizes = reinterpret_cast<const opt::StepSizes*>(uploads_.ints(host_sizes, 3));
  status_ = reinterpret_cast<opt::MetadataStatus*>(uploads_.scratch(sizeof(opt::MetadataStatus) / 4, -1));
  request_.status = status_;
}

opt::MetadataStatus StagedRequest::status() const {
  opt::MetadataStatus host{};
  if (status_ != nullptr) opt::copy_to_host(backend(), &host, status_, sizeof(host));
  return host;
}

opt::StepStructureHost StagedRequest::host() const {
  return {host_query_start_loc_.data(), host_seq_lens_.data(), host_token_to_req_.data()};
}

}  // namespace dsv4::harness
