// The shared main() of the Google Benchmark programs (kernel_bench, step_bench, in
// bench_main.cpp): --backends=, the program's own flags, the device line and run context, one
// CUDA stream and L2 flusher for the whole run, the program's benchmarks, and an orderly
// teardown (device buffers before the stream, while CUDA is still up); any error ends the
// run with "<program>: error: ..." and exit code 1.
// --l2_flush_mib=N: the L2 flush reads N MiB (at least the L2's size) instead of
// max(2 x L2, 64 MiB); issue 8 states its method with 512, which run_peer.py uses.
#pragma once
#include <functional>
#include <memory>

#include "bench/bench_common.h"
#include "bench/gpu_timing.h"

namespace dsv4::bench {

// The process-wide device state of a run (stream and flusher only when CUDA was chosen).
struct BenchDevice {
  GpuInfo gpu;
  std::unique_ptr<GpuStream> stream;
  std::unique_ptr<L2Flusher> flusher;
};
BenchDevice& bench_device();
// The run's stream for the CUDA backend (a cudaStream_t), null for the host backend.
void* cuda_stream(opt::Backend backend);

// What a program adds to the shared main; each program defines bench_program().
struct BenchProgram {
  const char* name = "bench";
  std::function<void(int* argc, char** argv)> take_flags;       // its flags, removed from argv
  std::function<void(const BackendChoice&)> start;              // after the device is set up
  std::function<void(const BackendChoice&)> register_benchmarks;
  std::function<void()> tear_down;                              // its device buffers and builders
};
BenchProgram bench_program();

}  // namespace dsv4::bench
