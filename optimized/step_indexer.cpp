#include "optimized/step_indexer.h"

#include <stdexcept>
#include <string>

#include "optimized/validation.h"

namespace dsv4::opt {

BuildRequest layer_build_request(const StepInputs& step, int32_t compress_ratio,
                                 const C4aLayerInputs* c4a) {
  const LayerKind kind = layer_kind_from_ratio(compress_ratio);
  BuildRequest r;
  r.window = step.window;
  r.num_requests = step.num_requests;
  r.num_tokens = step.num_tokens;
  r.num_decode_tokens = step.num_decode_tokens;
  r.decode_swa_indices = step.decode_swa_indices;
  r.query_start_loc = step.query_start_loc;
  r.seq_lens = step.seq_lens;
  r.token_to_req = step.token_to_req;
  r.swa = step.swa;
  // SWA-only keeps prefill_topk as (T - D) x 0: every layer's request has the step's shape.
  r.prefill_topk.rows = step.num_tokens - step.num_decode_tokens;
  switch (kind) {
    case LayerKind::kSwaOnly:  // SPEC §6: ratio 1, topk 0, no compressed columns
      r.ratio = 1;
      r.topk = 0;
      break;
    case LayerKind::kC128A:  // global decode slots with lens, local prefill indices, topk E
      r.ratio = 128;
      r.topk = step.c128a_topk;
      r.decode_compressed = step.c128a_decode_global;
      r.decode_local = false;
      r.decode_compressed_lens = step.c128a_decode_lens;
      r.prefill_topk = step.c128a_prefill_local;
      r.compressed = step.c128a;
      break;
    case LayerKind::kC4A:  // the layer's indexer picks: local decode form with validity
      if (c4a == nullptr) {
        throw std::invalid_argument("compress_ratio = " + std::to_string(compress_ratio) +
                                    " (C4A) needs the layer's indexer output (c4a is null)");
      }
      r.ratio = 4;
      r.topk = c4a->topk;
      r.decode_compressed = c4a->decode_local;
      r.decode_local = true;
      r.decode_valid = step.decode_valid;
      r.prefill_topk = c4a->prefill_topk;
      r.compressed = step.c4a;
      break;
  }
  return r;
}

namespace {

// Validated before the cache exists, so a rejected step releases nothing of the builder's.
const StepInputs& validated(const StepInputs& step) {
  validate_step_structure(layer_build_request(step, 1, nullptr), step.host);
  return step;
}

}  // namespace

std::string step_inputs_error(const StepInputs& step) {
  return step_structure_error(layer_build_request(step, 1, nullptr), step.host);
}

StepIndexer::StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step,
                         CacheOptions options)
    : builder_(builder), step_(validated(step)), cache_(builder, options) {}

StepIndexer::StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step, CacheOptions options,
                         Validated)
    : builder_(builder), step_(step), cache_(builder, options) {}

BuiltIndices StepIndexer::layer_indices(int32_t compress_ratio, const C4aLayerInputs* c4a) {
  const BuildRequest request = layer_build_request(step_, compress_ratio, c4a);
  validate_request_shape(request);
  return cache_.get_or_build(layer_kind_from_ratio(compress_ratio), request);
}

int64_t StepIndexer::content_errors() {
  content_errors_ += cache_.take_content_errors();
  return content_errors_;
}

}  // namespace dsv4::opt
