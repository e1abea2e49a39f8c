// Why kernel_bench's copy_bw benchmark reads ~12 % below its start-up copy bandwidth.
#include <cuda_runtime.h>
#include <cstdio>
#include <unistd.h>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
static cudaEvent_t e0, e1;
static double timed_copy(void* d, void* s, size_t n, cudaStream_t st) {
  cudaEventRecord(e0, st);
  cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, st);
  cudaEventRecord(e1, st);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  return 2.0 * n / (ms * 1e-3) / 1e9;
}
int main() {
  const size_t n = size_t{1} << 30;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  void *s, *d;
  CK(cudaMalloc(&s, n)); CK(cudaMalloc(&d, n));
  CK(cudaMemsetAsync(s, 0x5a, n, st));
  std::printf("A same buffers, back to back:");
  for (int i = 0; i < 12; ++i) std::printf(" %.0f", timed_copy(d, s, n, st));
  std::printf("\nB same buffers, 5 ms host sleep before each:");
  for (int i = 0; i < 8; ++i) { usleep(5000); std::printf(" %.0f", timed_copy(d, s, n, st)); }
  std::printf("\nC same buffers, 50 ms host sleep before each:");
  for (int i = 0; i < 6; ++i) { usleep(50000); std::printf(" %.0f", timed_copy(d, s, n, st)); }
  CK(cudaFree(s)); CK(cudaFree(d));
  std::printf("\nD fresh buffers each time (as BM_copy_bw: malloc, memset, 2 warm-ups, 1 timed, free):");
  for (int i = 0; i < 8; ++i) {
    CK(cudaMalloc(&s, n)); CK(cudaMalloc(&d, n));
    CK(cudaMemsetAsync(s, 0x5a, n, st));
    timed_copy(d, s, n, st); timed_copy(d, s, n, st);
    std::printf(" %.0f", timed_copy(d, s, n, st));
    CK(cudaFree(s)); CK(cudaFree(d));
  }
  std::printf("\nE fresh buffers each time, timed copies 3..6:");
  for (int i = 0; i < 4; ++i) {
    CK(cudaMalloc(&s, n)); CK(cudaMalloc(&d, n));
    CK(cudaMemsetAsync(s, 0x5a, n, st));
    timed_copy(d, s, n, st); timed_copy(d, s, n, st);
    std::printf(" [");
    for (int k = 0; k < 4; ++k) std::printf(" %.0f", timed_copy(d, s, n, st));
    std::printf(" ]");
    CK(cudaFree(s)); CK(cudaFree(d));
  }
  std::printf("\nF the default stream (legacy), same buffers:");
  CK(cudaMalloc(&s, n)); CK(cudaMalloc(&d, n));
  CK(cudaMemset(s, 0x5a, n));
  for (int i = 0; i < 6; ++i) std::printf(" %.0f", timed_copy(d, s, n, 0));
  std::printf("\n");
  return 0;
}
