// The per-step layer-kind cache (SPEC §5): one build per cacheable key per step, C4A never
// cached unless it names its index source (SPEC §8: cached per (source, shape)), a hit returns
// the very same buffers, no use after the step ended.
#pragma once
#include <cstdint>
#include <vector>

#include "optimized/builder.h"
#include "optimized/layer_kind.h"

namespace dsv4::opt {

struct CacheOptions {
  bool enabled = true;         // false: every call builds (the uncached baseline)
  bool verify_on_hit = false;  // debugging engines: rebuild on every hit and compare
  // The per-step token plan (kernels/token_plan.h): the step's first host-sized build of
  // prefill rows into the workspace writes it, the step's later host-sized builds over the
  // same metadata read it (one dependent read less per prefill row). Requests that name a
  // plan themselves are passed through as they are.
  bool share_token_plan = true;
};

// Everything that may legitimately differ between two same-kind layers of one step.
struct CacheKey {
  LayerKind kind = LayerKind::kSwaOnly;
  int32_t num_tokens = 0, num_decode_tokens = 0, num_requests = 0;
  int32_t window = 0, ratio = 0, topk = 0;
  int32_t decode_width = 0, prefill_width = 0;
  bool decode_local = false, has_decode_lens = false, has_decode_valid = false;
  int32_t swa_block_size = 0, swa_blocks_per_row = 0;
  int32_t compressed_block_size = 0, compressed_blocks_per_row = 0;
  // SPEC §7: addressing, capacities, and where the build writes and reads its sizes (layers
  // given different caller-owned outputs are built into each).
  struct TableAddressing {
    int64_t row_stride = 0;
    int32_t block_span = 0, base_offset = 0;
    bool operator==(const TableAddressing& o) const {
      return row_stride == o.row_stride && block_span == o.block_span && base_offset == o.base_offset;
    }
  };
  TableAddressing swa_table, compressed_table;
  int32_t row_capacity = 0, compressed_capacity = 0;
  const int32_t* output = nullptr;
  const StepSizes* run_time_sizes = nullptr;
  const MetadataStatus* status = nullptr;
  // SPEC §8: the part of the rows built, and a C4A layer's index source (-1: none).
  RowPart part = RowPart::kWhole;
  int32_t index_source = -1;
  bool operator==(const CacheKey& o) const;
};
CacheKey cache_key(LayerKind kind, const BuildRequest& request, int32_t index_source = -1);

// SPEC §8: whether a layer's build is cached: SWA-only and C128A always, C4A when it names the
// indexer that produced its top-k (index_source >= 0).
constexpr bool is_cacheable(LayerKind kind, int32_t index_source) {
  return is_cacheable(kind) || index_source >= 0;
}

// One build of a layer: what build_together takes (SPEC §8 one launch).
struct LayerBuild {
  LayerKind kind = LayerKind::kSwaOnly;
  BuildRequest request;
  int32_t index_source = -1;
};

class StepIndexCache {
 public:
  explicit StepIndexCache(MixedSparseIndicesBuilder& builder, CacheOptions options = {});
  ~StepIndexCache();  // ends the step if still open
  StepIndexCache(const StepIndexCache&) = delete;
  StepIndexCache& operator=(const StepIndexCache&) = delete;

  // A hit returns the first build's buffers; C4A builds unless it names an index source
  // (index_source >= 0: cached per (source, shape)). After end_step(): throws
  // std::logic_error. verify_on_hit: a rebuilt result that differs throws std::logic_error
  // naming the kind, token, column and both values.
  BuiltIndices get_or_build(LayerKind kind, const BuildRequest& request, int32_t index_source = -1);
  // SPEC §8 one launch: the builds whose keys are not cached yet (at most kMaxBuildsTogether)
  // are built by one builder call (build_together: one kernel launch on CUDA); the cacheable
  // ones become entries, so that later get_or_build calls of their keys hit. `out[i]` is
  // build i's output (the cached one for a key already there: a hit). With the cache
  // disabled: throws std::logic_error.
  void build_together(const LayerBuild* builds, int count, BuiltIndices* out);
  // Releases the builder's outputs; every later call throws std::logic_error.
  void end_step();
  bool ended() const { return ended_; }

  // (Added by the optimized-path owner.) Content errors of this cache's builds since the last
  // call (CUDA: synchronizes). Verify rebuilds are not counted, so the count is the same with
  // and without verify_on_hit; a hit adds nothing (its build was counted once).
  int64_t take_content_errors();

  int64_t builder_calls() const { return builder_calls_; }  // builds; verify rebuilds not counted
  int64_t launches() const { return launches_; }  // build() and build_together() calls
  int64_t hits() const { return hits_; }
  size_t entries() const { return entries_.size(); }
  const CacheOptions& options() const { return options_; }

 private:
  struct Entry {
    CacheKey key;
    BuildRequest request;
    BuiltIndices built;
  };
  MixedSparseIndicesBuilder& builder_;
  CacheOptions options_;
  std::vector<Entry> entries_;  // a handful per step: linear search beats hashing
  void verify_hit(const Entry& entry, const BuildRequest& request);
  // The step's token plan: where it is and the metadata it was made from (entries null: none
  // yet).
  struct TokenPlan {
    const TokenPlanEntry* entries = nullptr;
    const int32_t* query_start_loc = nullptr;
    const int32_t* seq_lens = nullptr;
    const int32_t* token_to_req = nullptr;
    int32_t num_tokens = 0, num_decode_tokens = 0;
  };
  TokenPlan plan_;
  // `request` as this cache sends it: reading the step's plan, or (`may_write`, none yet) writing it.
  BuildRequest with_token_plan(const BuildRequest& request, bool may_write) const;
  void remember_token_plan(const BuildRequest& sent, const BuiltIndices& built);
  BuiltIndices build(const BuildRequest& request);
  const Entry* find(const CacheKey& key) const;
  void throw_if_ended(LayerKind kind) const;

  int64_t builder_calls_ = 0;
  int64_t launches_ = 0;
  int64_t hits_ = 0;
  int64_t counted_errors_ = 0;  // taken from the builder around verify rebuilds
  bool ended_ = false;
};

}  // namespace dsv4::opt
