#include "optimized/builder.h"

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

}  // namespace dsv4::opt
