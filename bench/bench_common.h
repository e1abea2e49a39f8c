// What the three benchmark programs share: which backends to run (--backends=), the host
// clock, medians and the run's provenance (commit, date, device).
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/gpu_timing.h"
#include "optimized/builder.h"

namespace dsv4::bench {


struct BackendChoice {
  bool cuda = false;
  bool host = false;
  std::vector<opt::Backend> list() const;
};
// Removes "--backends=LIST" (LIST: comma-separated "cuda", "host") from argv. Default: cuda
// when a CUDA device is usable, host otherwise. Asking for cuda without a device throws
// std::invalid_argument saying why.
BackendChoice parse_backends(int* argc, char** argv);
// Removes every argv entry equal to `flag`; true when there was one.
bool take_flag(int* argc, char** argv, const char* flag);
// Removes every argv entry starting with `prefix` (e.g. "--l2_flush_mib="); the last one's
// text after the prefix, nothing when there was none.
std::optional<std::string> take_option(int* argc, char** argv, const char* prefix);
// take_option's value read as a whole number in [lo, hi]; anything else throws
// std::invalid_argument naming the option, the value and the range.
std::optional<int64_t> take_int_option(int* argc, char** argv, const char* prefix, int64_t lo, int64_t hi);
// True when the CUDA backend is compiled in and a device is visible.
bool cuda_usable();

// Benchmark-name prefix: "cuda" for device timings, "cpu" for the host backend's.
const char* timing_prefix(opt::Backend backend);

inline double now_us() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::micro>(clock::now().time_since_epoch()).count();
}

// Median of the samples (0 for none).
double median(std::vector<double> samples);

// The commit compiled in (DSV4_GIT_COMMIT from `git rev-parse` at configure time) or "unknown".
std::string build_commit();
std::string utc_now_iso8601();
// One line naming the device or saying that timings are CPU timings and why.
std::string device_line(const GpuInfo& gpu, bool cuda_selected);

}  // namespace dsv4::bench
