#include "harness/backend_step.h"

#include <stdexcept>

namespace dsv4::harness {
namespace {

template <class T>
std::vector<T> to_vector(const Eigen::Matrix<T, Eigen::Dynamic, 1>& v) {
  return std::vector<T>(v.data(), v.data() + v.size());
}

}  // namespace

BackendStep::BackendStep(opt::Backend backend, const ref::Step& step,
                         const ref::ModelSchedule& schedule,
                         const std::vector<ref::C4aIndexerOutput>& c4a_per_layer, const StepLayout& layout)
    : backend_(backend), uploads_(backend) {
  const int32_t num_decode = step.num_decode_tokens;
  host_query_start_loc_ = to_vector(step.query_start_loc);
  host_seq_lens_ = to_vector(step.seq_lens);
  host_token_to_req_ = to_vector(step.token_to_req);

  inputs_.num_requests = step.num_requests();
  inputs_.num_tokens = step.num_tokens();
  inputs_.num_decode_tokens = num_decode;
  inputs_.window = schedule.window;
  inputs_.query_start_loc = uploads_.ints(host_query_start_loc_.data(), step.query_start_loc.size());
  inputs_.seq_lens = uploads_.ints(host_seq_lens_.data(), step.seq_lens.size());
  inputs_.token_to_req = uploads_.ints(host_token_to_req_.data(), step.token_to_req.size());
  if (!layout.drop_decode_valid) {
    std::vector<uint8_t> decode_valid = step.decode_valid;
    if (decode_valid.empty()) decode_valid.assign(static_cast<size_t>(num_decode), 1);
    inputs_.decode_valid = uploads_.bytes(decode_valid);
  }
  const auto cache = [&](const ref::PagedCache& c, const TableLayout& t) {
    return uploads_.cache(c, t.row_padding, t.extra_rows);
  };
  inputs_.swa = cache(step.swa, layout.swa_table);
  if (!layout.drop_c4a_table) inputs_.c4a = cache(step.c4a, layout.c4a_table);  // else: none, the SWA table
  if (!layout.drop_c128a_table) inputs_.c128a = cache(step.c128a, layout.c128a_table);
  inputs_.decode_swa_indices =
      uploads_.matrix(ref::decode_swa_indices(step, schedule.window), layout.decode_swa_indices);

  const ref::C128aMetadata c128a = ref::c128a_metadata(step);
  inputs_.c128a_topk = c128a.effective_width;
  inputs_.c128a_decode_global = uploads_.matrix(c128a.decode_global, layout.c128a_decode_global);
  if (!layout.drop_c128a_decode_lens)
    inputs_.c128a_decode_lens = uploads_.ints(c128a.decode_lens.data(), c128a.decode_lens.size());
  inputs_.c128a_prefill_local = uploads_.matrix(c128a.prefill_local, layout.c128a_prefill_local);

  inputs_.host.query_start_loc = host_query_start_loc_.data();
  inputs_.host.seq_lens = host_seq_lens_.data();
  inputs_.host.token_to_req = host_token_to_req_.data();

  c4a_.resize(static_cast<size_t>(schedule.num_layers()));
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    if (ref::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(layer)]) !=
        ref::LayerKind::kC4A) {
      continue;
    }
    if (static_cast<size_t>(layer) >= c4a_per_layer.size()) {
      throw std::invalid_argument("BackendStep: no C4A indexer output for layer " +
                                  std::to_string(layer));
    }
    const ref::C4aIndexerOutput& out = c4a_per_layer[static_cast<size_t>(layer)];
    auto inputs = std::make_unique<opt::C4aLayerInputs>();
    inputs->topk = c4a_topk(layout, layer, schedule.c4a_topk);
    inputs->source = c4a_source(layout, layer);
    inputs->decode_local = uploads_.matrix(out.decode_local, layer_entry(layout.c4a_decode_local, layer));
    inputs->prefill_topk = uploads_.matrix(out.prefill_topk, layer_entry(layout.c4a_prefill_topk, layer));
    c4a_[static_cast<size_t>(layer)] = std::move(inputs);
  }
}

const opt::C4aLayerInputs* BackendStep::c4a(int32_t layer) const {
  if (layer < 0 || static_cast<size_t>(layer) >= c4a_.size()) return nullptr;
  return c4a_[static_cast<size_t>(layer)].get();
}

HostIndices download(opt::Backend backend, const opt::BuiltIndices& built) {
  HostIndices host;
  host.sparse_indices.resize(built.num_tokens, built.width);
  host.sparse_lens.resize(built.num_tokens);
  if (built.row_stride == built.width) {
    opt::copy_to_host(backend, host.sparse_indices.data(), built.sparse_indices,
                      static_cast<size_t>(host.sparse_indices.size()) * sizeof(int32_t));
  } else {  // caller-owned rows with a wider stride (SPEC §7): row by row
    for (int32_t t = 0; t < built.num_tokens; ++t) {
      opt::copy_to_host(backend, host.sparse_indices.row(t).data(), built.sparse_indices + t * built.row_stride,
                        static_cast<size_t>(built.width) * sizeof(int32_t));
    }
  }
  if (built.sparse_lens == nullptr) {  // SPEC §8's SWA segment has no lengths
    host.sparse_lens.resize(0);
    return host;
  }
  opt::copy_to_host(backend, host.sparse_lens.data(), built.sparse_lens,
                    static_cast<size_t>(built.num_tokens) * sizeof(int32_t));
  return host;
}

}  // namespace dsv4::harness
