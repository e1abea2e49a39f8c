// Builders leased per step, so that outputs handed to Python stay valid as long as Python holds
// them (torch's rule for storage) without copying them out of the builder's workspace.
//
// A step (or one `build()` call) leases a builder from its pool. The step and every array it
// exported share the lease; the builder's workspace is recycled, and the builder returned to the
// pool, only when the step has ended and the last of those arrays is gone. Arrays that outlive
// their step make the next step lease another builder: an engine that keeps last step's outputs
// alternates between two builders, each warm, and allocates nothing in steady state.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "optimized/builder.h"

namespace dsv4::py {

class BuilderPool;

struct Lease {  // shared (std::shared_ptr) by the step and its exported arrays
  std::shared_ptr<BuilderPool> pool;
  std::unique_ptr<opt::MixedSparseIndicesBuilder> builder;
  bool dirty = false;  // built since its content errors were last taken
  ~Lease();            // may run on any thread (a torch deleter), without the GIL
};

// The builders of one backend, device and stream.
class BuilderPool : public std::enable_shared_from_this<BuilderPool> {
 public:
  BuilderPool(opt::Backend backend, int device, void* stream, size_t workspace_bytes)
      : backend_(backend), device_(device), stream_(stream), workspace_bytes_(workspace_bytes) {}
  // An idle builder, or a new one (CUDA: on the current device, which must be device()).
  std::shared_ptr<Lease> lease();

  opt::Backend backend() const { return backend_; }
  int device() const { return device_; }
  void* stream() const { return stream_; }

 private:
  friend struct Lease;
  struct Idle {
    std::unique_ptr<opt::MixedSparseIndicesBuilder> builder;
    bool dirty;
  };
  const opt::Backend backend_;
  const int device_;
  void* const stream_;
  const size_t workspace_bytes_;
  std::mutex mutex_;  // leases end on whichever thread drops the last array
  std::vector<Idle> idle_;
};

// Forwards to the leased builder, except release_outputs: the step's end must not recycle
// memory that Python still holds; the lease does that when its last holder is gone.
class LeasedBuilder final : public opt::MixedSparseIndicesBuilder {
 public:
  explicit LeasedBuilder(Lease& lease) : lease_(lease) {}
  opt::Backend backend() const override { return lease_.builder->backend(); }
  opt::BuiltIndices build(const opt::BuildRequest& request) override {
    lease_.dirty = true;
    return lease_.builder->build(request);
  }
  int64_t take_content_errors() override {
    lease_.dirty = false;
    return lease_.builder->take_content_errors();
  }
  void release_outputs() override {}

 private:
  Lease& lease_;
};

}  // namespace dsv4::py
