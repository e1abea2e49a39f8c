// One reference BuilderInputs staged in a backend's memory as an optimized BuildRequest
// (owns the buffers), in a chosen layout. For tests and properties that drive a builder or
// the StepIndexCache directly, below the StepIndexer.
#pragma once
#include <vector>

#include "harness/backend_upload.h"
#include "optimized/build_request.h"
#include "reference/metadata_checks.h"
#include "reference/mixed_sparse_indices.h"

namespace dsv4::harness {

class StagedRequest {
 public:
  StagedRequest(opt::Backend backend, const ref::BuilderInputs& in, const RequestLayout& layout = {});
  // SPEC §7 run-time sizes: `in`'s buffers are capacities; the sizes and a status word are
  // staged in the backend's memory too.
  StagedRequest(opt::Backend backend, const ref::BuilderInputs& in, const RequestLayout& layout,
                const ref::RunTimeSizes& sizes);
  StagedRequest(const StagedRequest&) = delete;
  StagedRequest& operator=(const StagedRequest&) = delete;

  const opt::BuildRequest& request() const { return request_; }
  // Host copies of the step structure, for opt::validate_step_structure.
  opt::StepStructureHost host() const;
  opt::Backend backend() const { return uploads_.backend(); }
  // The status word the last build wrote (run-time sizes only).
  opt::MetadataStatus status() const;

 private:
  BackendUploads uploads_;
  std::vector<int32_t> host_query_start_loc_, host_seq_lens_, host_token_to_req_;
  opt::BuildRequest request_;
  opt::MetadataStatus* status_ = nullptr;
};

}  // namespace dsv4::harness
