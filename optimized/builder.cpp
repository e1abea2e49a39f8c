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

void MixedSparseIndicesBuilder::begin_recording() {
  throw std::logic_error(std::string("this ") + backend_name(backend()) + " builder cannot record builds");
}

std::unique_ptr<RecordedBuilds> MixedSparseIndicesBuilder::end_recording() {
  throw std::logic_error(std::string("this ") + backend_name(backend()) + " builder cannot record builds");
}

}  // namespace dsv4::opt
