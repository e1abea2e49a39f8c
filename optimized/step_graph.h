// The graph-mode sibling of StepIndexer (SPEC §7): every layer's build of a step, through the
// per-step cache, recorded once over the engine's persistent buffers and replayed for later
// steps whose metadata and run-time sizes were written into the same memory.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "optimized/step_indexer.h"

namespace dsv4::opt {

// Caller-owned outputs: one per cache key of a step (all SWA-only layers share one build, so
// do all C128A layers) and one per C4A layer. Each [T_cap][row_stride], 16-byte aligned rows.
// Seed mode: combined [T_cap][W + P_cap] outputs. Split mode (SPEC §8): these hold the
// compressed segments [T_cap][P_cap] with compressed_lens (swa_only: P = 0, its lens only),
// and swa_segment the step's one SWA segment.
struct StepGraphOutputs {
  OutputView swa_only;          // needed when the schedule has SWA-only layers
  OutputView c128a;             // needed when it has C128A layers
  std::vector<OutputView> c4a;  // one per C4A layer, in layer order
  OutputView swa_segment;       // split mode: [T_cap][W], no lens
};

// What a StepGraph is recorded over; every pointer stays valid while the graph lives.
struct StepGraphSpec {
  std::vector<int32_t> compress_ratios;  // one per layer (SPEC §5)
  // The persistent buffers as StepInputs at their capacities: num_tokens = T_cap,
  // num_decode_tokens = D_cap, num_requests = R_cap (tables may have more rows), and
  // c128a_topk = the C128A capacity P_cap (e.g. max_compressed; the C128A matrices are that
  // wide). `host` is not used: the metadata is checked on the device.
  StepInputs capacities;
  const StepSizes* run_time_sizes = nullptr;  // T, D, R of the step being replayed
  std::vector<C4aLayerInputs> c4a;             // one per C4A layer, in layer order
  StepGraphOutputs outputs;
  // Null, or kLayerKinds status words indexed by LayerKind: the first build of each kind in the
  // schedule writes its kind's word on every replay (the others check their rows alike).
  MetadataStatus* statuses = nullptr;
  // How the builds run on replay: as this many independent chains of consecutive builds, at
  // once (every input is written before the replay and the outputs are disjoint, which the
  // constructor checks). 1: one after another in layer order, each waiting for the one before
  // (what builds interleaved with an engine's layers in its own graph cost); >= the builds:
  // every build at once. Each chain adds ~1 us of host time to a replay (H200): 4 keeps the
  // replay's host time small while the GPU runs four builds at a time.
  int32_t chains = 4;
  // SPEC §8: kSeed (combined outputs) or kSplit (every layer's two segments, the SWA segment
  // built once per step). Tail-only has no graph form: each C4A build of a shape overwrites
  // the one before, so its layers' outputs would not all outlive the replay.
  SharingMode mode = SharingMode::kSeed;
};
inline constexpr int kLayerKinds = 3;

class StepGraph {
 public:
  // Records the step: one build per cache key and per C4A layer (Flash 23, Pro 31; split mode
  // one more, the SWA segment), the hit/miss pattern decided here from the schedule and the
  // capacities alone. Validates the
  // shapes and that no two outputs overlap (throws std::invalid_argument naming the field). Record while no eager step of
  // `builder` is open: the recording's cache releases the builder's workspace outputs.
  StepGraph(MixedSparseIndicesBuilder& builder, const StepGraphSpec& spec);

  // Runs every recorded build on the builder's stream (CUDA: one graph launch); nothing is
  // allocated, nothing waits for the device.
  void replay() { recorded_->replay(); }

  // Layer `layer`'s output: the same addresses on every replay. Each throws std::logic_error
  // in the other mode, std::out_of_range for a layer outside the schedule.
  const BuiltIndices& layer_indices(int32_t layer) const;         // seed mode
  const SplitIndices& layer_split_indices(int32_t layer) const;  // split mode
  int32_t num_layers() const { return num_layers_; }
  SharingMode mode() const { return mode_; }
  int64_t builds() const { return builds_; }  // builder calls recorded
  // Content errors of the replays since the last call (CUDA: synchronizes the stream).
  int64_t content_errors() { return builder_.take_content_errors(); }

 private:
  MixedSparseIndicesBuilder& builder_;
  SharingMode mode_;
  int32_t num_layers_ = 0;
  std::vector<BuiltIndices> layers_;        // seed mode
  std::vector<SplitIndices> split_layers_;  // split mode
  int64_t builds_ = 0;
  std::unique_ptr<RecordedBuilds> recorded_;
};

}  // namespace dsv4::opt
