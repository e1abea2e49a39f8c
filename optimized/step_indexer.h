// The entry point an engine calls per layer: the step's inputs + the layer's compress ratio
// (+ its C4A indexer output) -> that layer's indices, through the per-step cache, in one of the
// sharing modes of SPEC §8.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "optimized/step_index_cache.h"

namespace dsv4::opt {

// What every layer of one step shares (SPEC §2, §6), as views in the builder's memory.
struct StepInputs {
  int32_t num_requests = 0, num_tokens = 0, num_decode_tokens = 0;
  int32_t window = 128;
  const int32_t* query_start_loc = nullptr;  // R+1
  const int32_t* seq_lens = nullptr;         // R
  const int32_t* token_to_req = nullptr;     // T
  const uint8_t* decode_valid = nullptr;     // D or null (all valid)
  PagedCacheView swa, c4a, c128a;
  Int32Matrix decode_swa_indices;            // D x W (SPEC §6)
  // C128A metadata (SPEC §6)
  int32_t c128a_topk = 0;                    // effective width E
  Int32Matrix c128a_decode_global;           // D x E
  const int32_t* c128a_decode_lens = nullptr;  // D
  Int32Matrix c128a_prefill_local;           // (T-D) x E
  StepStructureHost host;                    // host copies for validation
};

// One C4A layer's indexer output, in the builder's memory.
struct C4aLayerInputs {
  int32_t topk = 0;
  Int32Matrix decode_local;   // D x K
  Int32Matrix prefill_topk;   // (T-D) x K
  // SPEC §8: the indexer that produced this top-k (layers sharing one indexer name the same
  // source and pass the same matrices); -1: none, the layer is never cached.
  int32_t source = -1;
};

// The build request of one layer (SWA-only: ratio 1, topk 0; C128A: global decode form with
// lens, topk E; C4A: local decode form with decode_valid). Throws std::invalid_argument for an
// unknown ratio or a C4A layer without indexer output.
BuildRequest layer_build_request(const StepInputs& step, int32_t compress_ratio,
                                 const C4aLayerInputs* c4a);

// The step's structural error (SPEC §4), the message StepIndexer's constructor would throw, or
// "" for a valid step; throws nothing (validation.h says for whom).
std::string step_inputs_error(const StepInputs& step);

// SPEC §8: what a step shares beyond the seed's per-kind cache. Every mode gives each layer
// its SPEC §3 output (in its form), and caches C4A layers that name an index source.
enum class SharingMode : uint8_t {
  kSeed,      // SPEC §5: combined [T][W + P] outputs (layer_indices)
  kSplit,     // two segments per layer, the SWA segment built once per step (layer_split_indices)
  kTailOnly,  // combined outputs; each unsourced C4A layer writes only its compressed columns
              // and lengths into one buffer per C4A shape whose window columns are written
              // once per step (layer_tail_indices)
};
const char* sharing_mode_name(SharingMode mode);  // "seed", "split", "tail"

// A layer's output in the split form (SPEC §8): the combined matrix cut at column W.
struct SplitIndices {
  BuiltIndices swa;         // T x W, the step's one SWA segment (sparse_lens null)
  BuiltIndices compressed;  // T x P_cap; sparse_lens = compressed_lens = sparse_lens - W
};

// A layer's combined output in tail-only mode. An unsourced C4A layer's is valid until the
// step's next build into the same buffer (the next unsourced C4A layer of its shape: the
// consumer runs layers in order); every other layer's until the end of the step. get() says
// which: a handle whose indices are gone throws instead of returning another layer's.
class TailIndices {
 public:
  TailIndices() = default;
  // The layer's indices; std::logic_error when a later C4A build overwrote them or the step
  // ended.
  const BuiltIndices& get() const;
  bool valid() const;

 private:
  friend class StepIndexer;
  struct Lifetime;  // one per step: each tail buffer's build count, and the step's end
  TailIndices(std::shared_ptr<const Lifetime> lifetime, int32_t buffer, uint64_t generation, BuiltIndices built)
      : lifetime_(std::move(lifetime)), buffer_(buffer), generation_(generation), built_(built) {}
  std::shared_ptr<const Lifetime> lifetime_;  // null: a default-constructed handle
  int32_t buffer_ = -1;                       // -1: not a tail buffer, valid until the step ends
  uint64_t generation_ = 0;
  BuiltIndices built_;
};

class StepIndexer {
 public:
  // Validates the step's structure once (throws std::invalid_argument).
  StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step, CacheOptions options = {},
              SharingMode mode = SharingMode::kSeed);
  // For a step whose caller found step_inputs_error(step) empty: it is not checked again.
  struct Validated {};
  StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step, CacheOptions options, Validated,
              SharingMode mode = SharingMode::kSeed);
  ~StepIndexer();
  StepIndexer(const StepIndexer&) = delete;
  StepIndexer& operator=(const StepIndexer&) = delete;

  // The layer's indices in the mode's form; each throws std::logic_error in another mode.
  BuiltIndices layer_indices(int32_t compress_ratio, const C4aLayerInputs* c4a = nullptr);  // kSeed
  SplitIndices layer_split_indices(int32_t compress_ratio, const C4aLayerInputs* c4a = nullptr);  // kSplit
  TailIndices layer_tail_indices(int32_t compress_ratio, const C4aLayerInputs* c4a = nullptr);  // kTailOnly

  // SPEC §8 one launch: builds now, in one builder call (one kernel launch on CUDA), what the
  // step's cacheable kinds among `compress_ratios` need: the SWA-only and C128A outputs, and
  // the mode's shared SWA segment (split) or, given a C4A layer's inputs `c4a`, the window
  // columns of that shape's tail buffer (tail-only). Later layers of those keys hit. Needs the
  // cache enabled (std::logic_error otherwise).
  void build_cacheable_together(const std::vector<int32_t>& compress_ratios, const C4aLayerInputs* c4a = nullptr);

  // Content errors of this step's builds so far (CUDA: synchronizes).
  int64_t content_errors();
  void end_step();
  const StepIndexCache& cache() const { return cache_; }
  SharingMode mode() const { return mode_; }

 private:
  struct TailBuffer {
    CacheKey shape;  // the C4A layer's key: layers of the same key share the buffer
    BuiltIndices built;
  };
  void require_mode(SharingMode mode, const char* call) const;
  BuildRequest layer_request(int32_t compress_ratio, const C4aLayerInputs* c4a) const;
  BuildRequest window_segment_request() const;
  TailBuffer* tail_buffer(const CacheKey& shape);

  MixedSparseIndicesBuilder& builder_;
  StepInputs step_;
  StepIndexCache cache_;
  SharingMode mode_;
  std::vector<TailBuffer> tail_buffers_;
  std::shared_ptr<TailIndices::Lifetime> lifetime_;  // tail-only mode
  int64_t content_errors_ = 0;
};

}  // namespace dsv4::opt
