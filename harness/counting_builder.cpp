#include "harness/counting_builder.h"

#include <stdexcept>
#include <string>

namespace dsv4::harness {

int64_t expected_builder_calls(const ref::ModelSchedule& schedule, bool cached) {
  bool swa_only = false, c128a = false;
  int64_t c4a = 0;
  for (int32_t ratio : schedule.compress_ratios) {
    if (ratio == 0 || ratio == 1) swa_only = true;
    else if (ratio == 128) c128a = true;
    else if (ratio == 4) ++c4a;
    else throw std::invalid_argument("expected_builder_calls: compress ratio " +
                                     std::to_string(ratio) + " is not 0, 1, 4 or 128");
  }
  return cached ? (swa_only ? 1 : 0) + (c128a ? 1 : 0) + c4a : schedule.num_layers();
}

}  // namespace dsv4::harness
