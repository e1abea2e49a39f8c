#include "optimized/step_indexer.h"

#include <algorithm>
#include <cstdint>
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

const char* sharing_mode_name(SharingMode mode) {
  switch (mode) {
    case SharingMode::kSeed:
      return "seed";
    case SharingMode::kSplit:
      return "split";
    case SharingMode::kTailOnly:
      return "tail";
  }
  return "unknown";
}

struct TailIndices::Lifetime {
  std::vector<uint64_t> builds;  // per tail buffer: builds into it so far
  bool ended = false;
};

bool TailIndices::valid() const {
  if (lifetime_ == nullptr || lifetime_->ended) return false;
  return buffer_ < 0 || lifetime_->builds[static_cast<size_t>(buffer_)] == generation_;
}

const BuiltIndices& TailIndices::get() const {
  if (lifetime_ == nullptr) throw std::logic_error("TailIndices::get: an empty handle (no layer's indices)");
  if (lifetime_->ended) {
    throw std::logic_error("TailIndices::get: the step ended; its outputs are released");
  }
  if (!valid()) {
    throw std::logic_error("TailIndices::get: a later C4A build of the step wrote this tail-only buffer (" +
                           std::to_string(lifetime_->builds[static_cast<size_t>(buffer_)] - generation_) +
                           " since); a tail-only C4A output is valid until the next C4A build of its shape");
  }
  return built_;
}

namespace {

// Validated before the cache exists, so a rejected step releases nothing of the builder's.
const StepInputs& validated(const StepInputs& step) {
  validate_step_structure(layer_build_request(step, 1, nullptr), step.host);
  return step;
}

int32_t index_source(LayerKind kind, const C4aLayerInputs* c4a) {
  return kind == LayerKind::kC4A && c4a != nullptr && c4a->source >= 0 ? c4a->source : -1;
}

}  // namespace

std::string step_inputs_error(const StepInputs& step) {
  return step_structure_error(layer_build_request(step, 1, nullptr), step.host);
}

StepIndexer::StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step, CacheOptions options,
                         SharingMode mode)
    : StepIndexer(builder, validated(step), options, Validated{}, mode) {}

StepIndexer::StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step, CacheOptions options,
                         Validated, SharingMode mode)
    : builder_(builder), step_(step), cache_(builder, options), mode_(mode) {
  if (mode_ == SharingMode::kTailOnly) {
    lifetime_ = std::make_shared<TailIndices::Lifetime>();
    lifetime_->builds.reserve(4);
    tail_buffers_.reserve(4);
  }
}

StepIndexer::~StepIndexer() {
  if (lifetime_) lifetime_->ended = true;
}

void StepIndexer::end_step() {
  if (lifetime_) lifetime_->ended = true;
  cache_.end_step();
}

void StepIndexer::require_mode(SharingMode mode, const char* call) const {
  if (mode_ != mode) {
    throw std::logic_error(std::string("StepIndexer::") + call + " is the " + sharing_mode_name(mode) +
                           " mode's call; this step is in " + sharing_mode_name(mode_) + " mode");
  }
}

BuildRequest StepIndexer::layer_request(int32_t compress_ratio, const C4aLayerInputs* c4a) const {
  const BuildRequest request = layer_build_request(step_, compress_ratio, c4a);
  validate_request_shape(request);
  return request;
}

// SPEC §8's SWA segment: the window part of the step's SWA-only build (P = 0: T x W), the same
// for every layer (one window, SWA cache and decode SWA indices per step).
BuildRequest StepIndexer::window_segment_request() const {
  BuildRequest request = layer_build_request(step_, 1, nullptr);
  request.part = RowPart::kWindow;
  return request;
}

BuiltIndices StepIndexer::layer_indices(int32_t compress_ratio, const C4aLayerInputs* c4a) {
  require_mode(SharingMode::kSeed, "layer_indices");
  const LayerKind kind = layer_kind_from_ratio(compress_ratio);
  return cache_.get_or_build(kind, layer_request(compress_ratio, c4a), index_source(kind, c4a));
}

SplitIndices StepIndexer::layer_split_indices(int32_t compress_ratio, const C4aLayerInputs* c4a) {
  require_mode(SharingMode::kSplit, "layer_split_indices");
  const LayerKind kind = layer_kind_from_ratio(compress_ratio);
  BuildRequest compressed = layer_request(compress_ratio, c4a);
  compressed.part = RowPart::kCompressed;
  SplitIndices split;
  split.swa = cache_.get_or_build(LayerKind::kSwaOnly, window_segment_request());
  split.swa.sparse_lens = nullptr;  // the segment has no lengths
  split.compressed = cache_.get_or_build(kind, compressed, index_source(kind, c4a));
  return split;
}

StepIndexer::TailBuffer* StepIndexer::tail_buffer(const CacheKey& shape) {
  for (TailBuffer& b : tail_buffers_) {
    if (b.shape == shape) return &b;
  }
  return nullptr;
}

TailIndices StepIndexer::layer_tail_indices(int32_t compress_ratio, const C4aLayerInputs* c4a) {
  require_mode(SharingMode::kTailOnly, "layer_tail_indices");
  const LayerKind kind = layer_kind_from_ratio(compress_ratio);
  const int32_t source = index_source(kind, c4a);
  const BuildRequest request = layer_request(compress_ratio, c4a);
  if (kind != LayerKind::kC4A || source >= 0 || !cache_.options().enabled) {
    return TailIndices(lifetime_, -1, 0, cache_.get_or_build(kind, request, source));
  }
  const CacheKey shape = cache_key(kind, request);
  TailBuffer* buffer = tail_buffer(shape);
  if (buffer == nullptr) {  // the shape's first C4A layer: a whole build makes the buffer
    tail_buffers_.push_back(TailBuffer{shape, cache_.get_or_build(kind, request)});
    lifetime_->builds.push_back(1);
    return TailIndices(lifetime_, static_cast<int32_t>(tail_buffers_.size() - 1), 1, tail_buffers_.back().built);
  }
  BuildRequest tail = request;  // the compressed columns and lengths into the buffer
  tail.part = RowPart::kTail;
  tail.output = OutputView{buffer->built.sparse_indices, buffer->built.row_stride, buffer->built.sparse_lens};
  (void)cache_.get_or_build(kind, tail);
  const auto index = static_cast<size_t>(buffer - tail_buffers_.data());
  return TailIndices(lifetime_, static_cast<int32_t>(index), ++lifetime_->builds[index], buffer->built);
}

void StepIndexer::build_cacheable_together(const std::vector<int32_t>& compress_ratios, const C4aLayerInputs* c4a) {
  bool swa_only = false, c128a = false, c4a_layers = false;
  for (int32_t ratio : compress_ratios) {
    const LayerKind kind = layer_kind_from_ratio(ratio);
    swa_only = swa_only || kind == LayerKind::kSwaOnly;
    c128a = c128a || kind == LayerKind::kC128A;
    c4a_layers = c4a_layers || kind == LayerKind::kC4A;
  }
  LayerBuild builds[kMaxBuildsTogether];
  int count = 0;
  const auto add = [&](LayerKind kind, BuildRequest request, RowPart part) {
    request.part = part;
    builds[count++] = LayerBuild{kind, request, -1};
  };
  const RowPart part = mode_ == SharingMode::kSplit ? RowPart::kCompressed : RowPart::kWhole;
  if (mode_ == SharingMode::kSplit && !compress_ratios.empty()) {
    builds[count++] = LayerBuild{LayerKind::kSwaOnly, window_segment_request(), -1};
  }
  if (swa_only) add(LayerKind::kSwaOnly, layer_request(1, nullptr), part);
  if (c128a) add(LayerKind::kC128A, layer_request(128, nullptr), part);
  // Tail-only: the window columns of the C4A shape's buffer, unless it exists already.
  bool tail_window = false;
  if (mode_ == SharingMode::kTailOnly && c4a_layers && c4a != nullptr && c4a->source < 0) {
    const BuildRequest c4a_request = layer_request(4, c4a);
    tail_window = tail_buffer(cache_key(LayerKind::kC4A, c4a_request)) == nullptr;
    if (tail_window) add(LayerKind::kC4A, c4a_request, RowPart::kWindow);
  }
  BuiltIndices built[kMaxBuildsTogether];
  cache_.build_together(builds, count, built);
  if (tail_window) {
    BuildRequest whole = builds[count - 1].request;
    whole.part = RowPart::kWhole;  // the buffer serves the layers of the whole build's key
    tail_buffers_.push_back(TailBuffer{cache_key(LayerKind::kC4A, whole), built[count - 1]});
    lifetime_->builds.push_back(0);
  }
}

int64_t StepIndexer::content_errors() {
  content_errors_ += cache_.take_content_errors();
  return content_errors_;
}

}  // namespace dsv4::opt
