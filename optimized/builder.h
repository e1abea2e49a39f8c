// The builder interface: one call builds one layer's indices (SPEC §3). Two backends
// implement it (host_builder.h, cuda_builder.h); decorators (the harness's call counter)
// wrap it. Builders trust their input: validation happens once per step (validation.h).
#pragma once
#include <cstdint>
#include <memory>

#include "optimized/build_request.h"

namespace dsv4::opt {

enum class Backend : uint8_t { kHost, kCuda };
const char* backend_name(Backend backend);  // "host", "cuda"

class MixedSparseIndicesBuilder {
 public:
  virtual ~MixedSparseIndicesBuilder() = default;
  virtual Backend backend() const = 0;
  // Builds into fresh output buffers taken from the builder's step workspace (no
  // allocation on the per-layer path once the workspace is warm). CUDA: asynchronous on
  // the builder's stream.
  virtual BuiltIndices build(const BuildRequest& request) = 0;
  // Content errors (SPEC §4) counted by builds since the last call; resets the count.
  // CUDA: synchronizes the builder's stream.
  virtual int64_t take_content_errors() = 0;
  // End of step: every BuiltIndices handed out so far becomes invalid; the workspace
  // is recycled for the next step.
  virtual void release_outputs() = 0;
};

}  // namespace dsv4::opt
