// A decorator that counts build() calls and forwards everything to the wrapped builder (which
// it does not own): how the harness checks SPEC §5's call counts without touching the builders.
// It also counts the builds of each SPEC §8 row part, which tell the modes apart where their
// call counts agree (a tail-only step builds as many as the seed's, but tails), and the builds
// that write and that read the step's token plan.
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
    count(request);
    return inner_.build(request);
  }
  // SPEC §8 one launch: `count` builds, one call.
  void build_together(const opt::BuildRequest* requests, int count, opt::BuiltIndices* out) override {
    build_calls_ += count;
    ++launches_;
    for (int i = 0; i < count; ++i) this->count(requests[i]);
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
  int64_t token_plan_writes() const { return plan_writes_; }
  int64_t token_plan_reads() const { return plan_reads_; }
  const opt::TokenPlanEntry* last_token_plan_read() const { return last_plan_read_; }

 private:
  void count(const opt::BuildRequest& request) {
    ++part_builds_[static_cast<size_t>(request.part)];
    plan_writes_ += request.write_token_plan ? 1 : 0;
    if (request.token_plan != nullptr) {
      ++plan_reads_;
      last_plan_read_ = request.token_plan;
    }
  }
  opt::MixedSparseIndicesBuilder& inner_;
  std::array<int64_t, 4> part_builds_{};  // by RowPart: whole, window, compressed, tail
  int64_t build_calls_ = 0;
  int64_t launches_ = 0;
  int64_t releases_ = 0;
  int64_t plan_writes_ = 0;
  int64_t plan_reads_ = 0;
  const opt::TokenPlanEntry* last_plan_read_ = nullptr;
};

// Builder calls one step of `schedule` needs through the per-step cache (SPEC §5): one per
// cacheable kind present (all SWA-only layers of a step share one key, so do all C128A
// layers) plus one per C4A layer. Flash 23, Pro 31. Computed from the schedule alone, not
// from the optimized path's cache keys, so a wrong key cannot hide. Uncached: one per layer.
int64_t expected_builder_calls(const ref::ModelSchedule& schedule, bool cached);

}  // namespace dsv4::harness
