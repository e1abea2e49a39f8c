// A decorator that counts build() calls and forwards everything to the wrapped builder (which
// it does not own): how the harness checks SPEC §5's call counts without touching the builders.
// It also counts the builds of each SPEC §8 row part, which tell the modes apart where their
// call counts agree (a tail-only step builds as many as the seed's, but tails).
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "optimized/builder.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

class CountingBuilder final : public opt::MixedSparseIndicesBuilder {
 public:
  explicit CountingBuilder(opt::MixedSparseIndicesBuilder& inner) : inner_(inner) {}

  opt::Backend backend() const override { return inner_.backend(); }
  opt::BuiltIndices build(const opt::BuildRequest& request) override {
    ++build_calls_;
    ++launches_;
    ++part_builds_[static_cast<size_t>(request.part)];
    return inner_.build(request);
  }
  // SPEC §8 one launch: `count` builds, one call.
  void build_together(const opt::BuildRequest* requests, int count, opt::BuiltIndices* out) override {
    build_calls_ += count;
    ++launches_;
    for (int i = 0; i < count; ++i) ++part_builds_[static_cast<size_t>(requests[i].part)];
    inner_.build_together(requests, count, out);
  }
  int64_t take_content_errors() override { return inner_.take_content_errors(); }
  void release_outputs() override {
    ++releases_;
    inner_.release_outputs();
  }
  void begin_recording(int32_t chains) override { inner_.begin_recording(chains); }
  std::unique_ptr<opt::RecordedBuilds> end_recording() override { return inner_.end_recording(); }

  int64_t build_calls() const { return build_calls_; }  // builds since construction
  int64_t launches() const { return launches_; }  // build() and build_together() calls
  int64_t releases() const { return releases_; }
  int64_t builds_of(opt::RowPart part) const { return part_builds_[static_cast<size_t>(part)]; }

 private:
  opt::MixedSparseIndicesBuilder& inner_;
  std::array<int64_t, 4> part_builds_{};  // by RowPart: whole, window, compressed, tail
  int64_t build_calls_ = 0;
  int64_t launches_ = 0;
  int64_t releases_ = 0;
};

// Builder calls one step of `schedule` needs through the per-step cache (SPEC §5): one per
// cacheable kind present (all SWA-only layers of a step share one key, so do all C128A
// layers) plus one per C4A layer. Flash 23, Pro 31. Computed from the schedule alone, not
// from the optimized path's cache keys, so a wrong key cannot hide. Uncached: one per layer.
int64_t expected_builder_calls(const ref::ModelSchedule& schedule, bool cached);

}  // namespace dsv4::harness
