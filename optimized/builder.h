// The builder interface: one call builds one layer's indices (SPEC §3). Two backends
// implement it (host_builder.h, cuda_builder.h); decorators (the harness's call counter)
// wrap it. Builders trust their input: validation happens once per step (validation.h).
#pragma once
#include <cstdint>
#include <memory>

#include "kernels/multi_build.h"
#include "optimized/build_request.h"

namespace dsv4::opt {

// Builds recorded once and replayed many times (SPEC §7 CUDA graphs): the CUDA backend's is
// an instantiated CUDA graph launched on the builder's stream; the host backend's re-runs the
// recorded requests in order. A replay reads the inputs' memory as it is when it runs. It must
// not outlive its builder (its builds count content errors in the builder's counter).
class RecordedBuilds {
 public:
  virtual ~RecordedBuilds() = default;
  // Asynchronous on the builder's stream; no allocation, no host synchronization.
  virtual void replay() = 0;
};

enum class Backend : uint8_t { kHost, kCuda };

inline constexpr int kMaxBuildsTogether = kernels::kMaxBuildsPerLaunch;
const char* backend_name(Backend backend);  // "host", "cuda"
// std::invalid_argument when a request of one build_together call reads the token plan another
// writes (they run at once).
void check_token_plans_together(const BuildRequest* requests, int count);
// std::invalid_argument unless chains >= 1 (begin_recording's argument).
void check_recording_chains(int32_t chains);

class MixedSparseIndicesBuilder {
 public:
  virtual ~MixedSparseIndicesBuilder() = default;
  virtual Backend backend() const = 0;
  // Builds into fresh output buffers taken from the builder's step workspace (no
  // allocation on the per-layer path once the workspace is warm). CUDA: asynchronous on
  // the builder's stream.
  virtual BuiltIndices build(const BuildRequest& request) = 0;
  // SPEC §8 one launch: builds `count` (<= kMaxBuildsTogether) requests of one step and writes
  // their outputs to out[0, count). CUDA: one kernel launch where the requests share a compiled
  // form (16-byte rows, power-of-two blocks: every production layout), else a launch each;
  // host and the default: one build() each.
  virtual void build_together(const BuildRequest* requests, int count, BuiltIndices* out);
  // Content errors (SPEC §4) counted by builds since the last call; resets the count.
  // CUDA: synchronizes the builder's stream.
  virtual int64_t take_content_errors() = 0;
  // End of step: every BuiltIndices handed out so far becomes invalid; the workspace
  // is recycled for the next step.
  virtual void release_outputs() = 0;

  // Recording (SPEC §7): between begin_recording() and end_recording() a build runs nothing;
  // it is recorded (CUDA: stream capture of its launches) and returns its outputs, which must
  // be caller-owned (request.output; a workspace output would not outlive the step). The
  // recording replays every recorded build: in order for `chains` = 1; for chains > 1 the
  // caller promises that no recorded build reads what another writes and that their outputs
  // are disjoint (a step's layers over inputs all written before the replay), and the builds
  // run as `chains` independent runs of consecutive builds (CUDA: the capture's chain of
  // launches cut into that many graph branches, which the GPU runs at once; host: the reverse
  // order, which a dependence between builds would break in the tests). Builders that cannot
  // record throw std::logic_error (the default); chains < 1 is std::invalid_argument.
  virtual void begin_recording(int32_t chains);
  virtual std::unique_ptr<RecordedBuilds> end_recording();
};

}  // namespace dsv4::opt
