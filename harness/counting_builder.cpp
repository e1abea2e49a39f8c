#include "harness/counting_builder.h"

#include <stdexcept>
#include <string>

namespace dsv4::harness {

CountingBuilder::CountingBuilder(std::unique_ptr<opt::MixedSparseIndicesBuilder> inner)
    : inner_(std::move(inner)) {
  if (!inner_) throw std::invalid_argument("CountingBuilder: inner builder is null");
}

opt::BuiltIndices CountingBuilder::build(const opt::BuildRequest& request) {
  ++build_calls_;
  return inner_->build(request);
}

void CountingBuilder::release_outputs() {
  ++releases_;
  inner_->release_outputs();
}

int64_t expected_cached_builder_calls(const ref::ModelSchedule& schedule) {
  bool swa_only = false, c128a = false;
  int64_t c4a = 0;
  for (int32_t ratio : schedule.compress_ratios) {
    if (ratio == 0 || ratio == 1) swa_only = true;
    else if (ratio == 128) c128a = true;
    else if (ratio == 4) ++c4a;
    else throw std::invalid_argument("expected_cached_builder_calls: compress ratio " +
                                     std::to_string(ratio) + " is not 0, 1, 4 or 128");
  }
  return (swa_only ? 1 : 0) + (c128a ? 1 : 0) + c4a;
}

}  // namespace dsv4::harness
