// libFuzzer target: the capture manifest parser (scripts/run_fuzz.sh builds and runs it).
#include "fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dsv4::fuzz::manifest(data, size);
  return 0;
}
