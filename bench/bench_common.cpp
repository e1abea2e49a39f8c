#include "bench/bench_common.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>
#include <sstream>
#include <stdexcept>

#include "optimized/cuda_builder.h"

#ifndef DSV4_GIT_COMMIT
#define DSV4_GIT_COMMIT "unknown"
#endif

namespace dsv4::bench {

std::vector<opt::Backend> BackendChoice::list() const {
  std::vector<opt::Backend> out;
  if (cuda) out.push_back(opt::Backend::kCuda);
  if (host) out.push_back(opt::Backend::kHost);
  return out;
}

bool cuda_usable() { return gpu_info().present && opt::cuda_device_present(); }

namespace {
// Removes every argv entry (after argv[0]) that `taken` accepts; `taken` sees each in order.
template <typename Taken>
void remove_args(int* argc, char** argv, Taken taken) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    if (!taken(argv[i])) argv[out++] = argv[i];
  }
  *argc = out;
}
}  // namespace

bool take_flag(int* argc, char** argv, const char* flag) {
  bool found = false;
  remove_args(argc, argv, [&](const char* arg) {
    if (std::strcmp(arg, flag) != 0) return false;
    found = true;
    return true;
  });
  return found;
}

std::optional<std::string> take_option(int* argc, char** argv, const char* prefix) {
  const size_t n = std::strlen(prefix);
  std::optional<std::string> value;
  remove_args(argc, argv, [&](const char* arg) {
    if (std::strncmp(arg, prefix, n) != 0) return false;
    value = std::string(arg + n);
    return true;
  });
  return value;
}

std::optional<int64_t> take_int_option(int* argc, char** argv, const char* prefix, int64_t lo, int64_t hi) {
  const std::optional<std::string> text = take_option(argc, argv, prefix);
  if (!text) return std::nullopt;
  int64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [at, ec] = std::from_chars(text->data(), end, value);
  if (text->empty() || ec != std::errc() || at != end || value < lo || value > hi) {
    throw std::invalid_argument(std::string(prefix) + *text + ": expected a whole number in [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return value;
}

BackendChoice parse_backends(int* argc, char** argv) {
  const std::optional<std::string> list = take_option(argc, argv, "--backends=");
  BackendChoice choice;
  if (!list) {
    choice.cuda = cuda_usable();
    choice.host = !choice.cuda;
    return choice;
  }
  std::stringstream ss(*list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "cuda") {
      choice.cuda = true;
    } else if (item == "host" || item == "cpu") {
      choice.host = true;
    } else {
      throw std::invalid_argument("--backends: unknown backend '" + item + "' (cuda, host)");
    }
  }
  if (!choice.cuda && !choice.host) throw std::invalid_argument("--backends: empty list");
  if (choice.cuda && !cuda_usable()) {
    const GpuInfo gpu = gpu_info();
    throw std::invalid_argument("--backends=cuda: no usable CUDA device (" +
                                (gpu.present ? std::string("CUDA builder not compiled in")
                                             : gpu.why_absent) +
                                ")");
  }
  return choice;
}

const char* timing_prefix(opt::Backend backend) {
  return backend == opt::Backend::kCuda ? "cuda" : "cpu";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string build_commit() { return DSV4_GIT_COMMIT; }

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string device_line(const GpuInfo& gpu, bool cuda_selected) {
  std::ostringstream os;
  if (cuda_selected) {
    os << "CUDA device timings: " << gpu.name << " (sm_" << gpu.compute_major << gpu.compute_minor
       << ", " << gpu.sm_count << " SMs, L2 " << (gpu.l2_bytes >> 20) << " MiB), CUDA driver "
       << cuda_version_string(gpu.driver_version) << ", runtime "
       << cuda_version_string(gpu.runtime_version);
  } else {
    os << "CPU timings (host backend)";
    if (!gpu.present) {
      os << ": no CUDA device (" << gpu.why_absent << ")";
    } else {
      os << ": host backend chosen although " << gpu.name << " is present";
    }
  }
  return os.str();
}

}  // namespace dsv4::bench
