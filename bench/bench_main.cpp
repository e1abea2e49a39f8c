#include "bench/bench_main.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace dsv4::bench {

BenchDevice& bench_device() {
  static BenchDevice device;
  return device;
}

void* cuda_stream(opt::Backend backend) {
  return backend == opt::Backend::kCuda ? bench_device().stream->get() : nullptr;
}

}  // namespace dsv4::bench

int main(int argc, char** argv) {
  using namespace dsv4::bench;
  const BenchProgram program = bench_program();
  BenchDevice& device = bench_device();
  auto tear_down = [&] {
    if (program.tear_down) program.tear_down();
    device.flusher.reset();
    device.stream.reset();
  };
  try {
    const BackendChoice backends = parse_backends(&argc, argv);
    const int64_t flush_mib = take_int_option(&argc, argv, "--l2_flush_mib=", 1, 1 << 16).value_or(0);
    if (program.take_flags) program.take_flags(&argc, argv);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    device.gpu = gpu_info();
    const std::string line = device_line(device.gpu, backends.cuda);
    std::printf("%s: %s\n", program.name, line.c_str());
    benchmark::AddCustomContext("dsv4_device", line);
    benchmark::AddCustomContext("dsv4_commit", build_commit());
    if (backends.cuda) {
      device.stream = std::make_unique<GpuStream>();
      if (flush_mib != 0 && (flush_mib << 20) < device.gpu.l2_bytes) {
        throw std::invalid_argument("--l2_flush_mib=" + std::to_string(flush_mib) + ": smaller than the L2 (" +
                                    std::to_string(device.gpu.l2_bytes >> 20) + " MiB), so it would not flush it");
      }
      device.flusher = std::make_unique<L2Flusher>(static_cast<size_t>(flush_mib) << 20);
      benchmark::AddCustomContext("dsv4_l2_flush_bytes", std::to_string(device.flusher->bytes()));
      benchmark::AddCustomContext("dsv4_gpu", device.gpu.name);
    }
    if (program.start) program.start(backends);
    std::fflush(stdout);
    program.register_benchmarks(backends);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    tear_down();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program.name, e.what());
    tear_down();
    return 1;
  }
  return 0;
}
