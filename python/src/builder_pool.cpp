#include "builder_pool.h"

#include "optimized/cuda_builder.h"
#include "optimized/host_builder.h"

namespace dsv4::py {

Lease::~Lease() {
  if (!builder) return;
  // A destructor (run by a framework's deleter, from C) must not throw: if the builder cannot
  // go back to the pool (no memory for the list, a failing release), it is freed instead.
  try {
    builder->release_outputs();  // no array of this lease is left: its memory may be reused
    std::lock_guard<std::mutex> lock(pool->mutex_);
    pool->idle_.push_back(BuilderPool::Idle{std::move(builder), dirty});
  } catch (...) {
    builder.reset();
  }
}

std::shared_ptr<Lease> BuilderPool::lease() {
  auto lease = std::make_shared<Lease>();
  lease->pool = shared_from_this();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      lease->builder = std::move(idle_.back().builder);
      lease->dirty = idle_.back().dirty;
      idle_.pop_back();
      return lease;
    }
  }
  lease->builder =
      backend_ == opt::Backend::kHost ? opt::make_host_builder() : opt::make_cuda_builder(stream_, workspace_bytes_);
  return lease;
}

}  // namespace dsv4::py
