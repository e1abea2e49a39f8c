// A reference step staged in one backend's memory, exposed as the optimized path's
// StepInputs and per-layer C4A inputs (owns the buffers), in a chosen layout.
#pragma once
#include <memory>
#include <vector>

#include "harness/backend_upload.h"
#include "harness/input_layout.h"
#include "optimized/backend_buffer.h"
#include "optimized/step_indexer.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

class BackendStep {
 public:
  // Computes the step's SPEC §6 metadata with the reference (decode SWA indices for
  // schedule.window, C128A metadata) and uploads it with the step and the C4A outputs.
  BackendStep(opt::Backend backend, const ref::Step& step, const ref::ModelSchedule& schedule,
              const std::vector<ref::C4aIndexerOutput>& c4a_per_layer, const StepLayout& layout = {});
  const opt::StepInputs& inputs() const { return inputs_; }
  // Null for a layer that is not C4A.
  const opt::C4aLayerInputs* c4a(int32_t layer) const;
  opt::Backend backend() const { return backend_; }

 private:
  opt::Backend backend_;
  BackendUploads uploads_;
  std::vector<int32_t> host_query_start_loc_, host_seq_lens_, host_token_to_req_;
  opt::StepInputs inputs_;
  std::vector<std::unique_ptr<opt::C4aLayerInputs>> c4a_;
};

// Copies a build's output to host matrices (sparse_indices T x width, sparse_lens T; no lens
// when the build has none).
struct HostIndices {
  ref::IndexMatrix sparse_indices;
  ref::IndexVector sparse_lens;
};
HostIndices download(opt::Backend backend, const opt::BuiltIndices& built);

}  // namespace dsv4::harness
