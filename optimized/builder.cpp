#include "optimized/builder.h"

#include <stdexcept>
#include <string>

namespace dsv4::opt {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::kHost:
      return "host";
    case Backend::kCuda:
      return "cuda";
  }
  return "unknown";
}

const char* row_part_name(RowPart part) {
  switch (part) {
    case RowPart::kWhole:
      return "whole";
    case RowPart::kWindow:
      return "window";
    case RowPart::kCompressed:
      return "compressed";
    case RowPart::kTail:
      return "tail";
  }
  return "unknown";
}

void check_token_plans_together(const BuildRequest* requests, int count) {
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (requests[i].token_plan != nullptr && requests[j].write_token_plan &&
          requests[i].token_plan == requests[j].output.token_plan) {
        throw std::invalid_argument("build_together: request " + std::to_string(i) +
                                    "'s token_plan is what request " + std::to_string(j) +
                                    " writes (builds of one call run at once: build the plan first)");
      }
    }
  }
}

void MixedSparseIndicesBuilder::build_together(const BuildRequest* requests, int count, BuiltIndices* out) {
  if (count > kMaxBuildsTogether) {
    throw std::invalid_argument("build_together: " + std::to_string(count) + " requests, at most " +
                                std::to_string(kMaxBuildsTogether));
  }
  check_token_plans_together(requests, count);
  for (int i = 0; i < count; ++i) out[i] = build(requests[i]);
}

void check_recording_chains(int32_t chains) {
  if (chains < 1) {
    throw std::invalid_argument("begin_recording: chains must be >= 1, got " + std::to_string(chains));
  }
}

void MixedSparseIndicesBuilder::begin_recording(int32_t) {
  throw std::logic_error(std::string("this ") + backend_name(backend()) + " builder cannot record builds");
}

std::unique_ptr<RecordedBuilds> MixedSparseIndicesBuilder::end_recording() {
  throw std::logic_error(std::string("this ") + backend_name(backend()) + " builder cannot record builds");
}

}  // namespace dsv4::opt
