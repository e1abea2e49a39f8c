// The entry point an engine calls per layer: the step's inputs + the layer's compress ratio
// (+ its C4A indexer output) -> that layer's indices, through the per-step cache.
#pragma once
#include <string>

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
};

// The build request of one layer (SWA-only: ratio 1, topk 0; C128A: global decode form with
// lens, topk E; C4A: local decode form with decode_valid). Throws std::invalid_argument for an
// unknown ratio or a C4A layer without indexer output.
BuildRequest layer_build_request(const StepInputs& step, int32_t compress_ratio,
                                 const C4aLayerInputs* c4a);

// The step's structural error (SPEC §4), the message StepIndexer's constructor would throw, or
// "" for a valid step; throws nothing (validation.h says for whom).
std::string step_inputs_error(const StepInputs& step);

class StepIndexer {
 public:
  // Validates the step's structure once (throws std::invalid_argument).
  StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step, CacheOptions options = {});
  // For a step whose caller found step_inputs_error(step) empty: it is not checked again.
  struct Validated {};
  StepIndexer(MixedSparseIndicesBuilder& builder, const StepInputs& step, CacheOptions options, Validated);
  BuiltIndices layer_indices(int32_t compress_ratio, const C4aLayerInputs* c4a = nullptr);
  // Content errors of this step's builds so far (CUDA: synchronizes).
  int64_t content_errors();
  void end_step() { cache_.end_step(); }
  const StepIndexCache& cache() const { return cache_; }

 private:
  MixedSparseIndicesBuilder& builder_;
  StepInputs step_;
  StepIndexCache cache_;
  int64_t content_errors_ = 0;
};

}  // namespace dsv4::opt
