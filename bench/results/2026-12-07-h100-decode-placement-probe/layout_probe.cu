// Probe (layout_probe): does a tiny copy build (64 rows x 512 B, one warp a row, like the SWA-only decode of 64)
// take longer when its buffers sit on separate allocations than when they share one?
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void copy_rows(const int4* __restrict__ in, const int* __restrict__ t2r, int4* out, int* lens, int nreq) {
  const int t = blockIdx.x, k = threadIdx.x;
  const int r = __ldg(t2r + t);
  int4 v = __ldcs(in + t * 32 + k);
  if ((unsigned)r >= (unsigned)nreq) v = make_int4(-1, -1, -1, -1);
  __stcs(out + t * 32 + k, v);
  if (k == 0) lens[t] = (unsigned)r < (unsigned)nreq ? 128 : 0;
}
__global__ void copy_rows_noreq(const int4* __restrict__ in, int4* out, int* lens) {
  const int t = blockIdx.x, k = threadIdx.x;
  int4 v = __ldcs(in + t * 32 + k);
  __stcs(out + t * 32 + k, v);
  if (k == 0) lens[t] = 128;
}
__global__ void empty_kernel() {}
__global__ void flush(const int4* p, long n, int* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    int4 v = __ldcg(p + i); acc.x ^= v.x;
  }
  if (acc.x == 123456789) *sink = acc.x;
}

struct Bufs { int4* in; int* t2r; int4* out; int* lens; };

int main() {
  const int rows = 64;
  const size_t in_b = rows * 512, t2r_b = rows * 4, out_b = rows * 512, lens_b = rows * 4;
  int4* fl; int* sink; const long fl_n = (512l << 20) / 16;
  CK(cudaMalloc(&fl, fl_n * 16)); CK(cudaMalloc(&sink, 4)); CK(cudaMemset(fl, 1, fl_n * 16));
  // packed: one allocation, the four buffers 64 KB apart
  char* pack; CK(cudaMalloc(&pack, 1 << 20));
  Bufs packed{(int4*)pack, (int*)(pack + 65536), (int4*)(pack + 131072), (int*)(pack + 196608)};
  // separate, natural sizes (as kernel_bench's buffers: one cudaMalloc each), with 64 MB of other
  // allocations between them, meant to keep them on separate 2 MB pages. They did not: the driver
  // placed the four small ones within 66 KB of each other (the run's printed addresses).
  std::vector<void*> pad;
  auto far = [&](size_t b) { void* p; cudaMalloc(&p, b); void* q; cudaMalloc(&q, 64 << 20); pad.push_back(q); return p; };
  Bufs sep{(int4*)far(in_b), (int*)far(t2r_b), (int4*)far(out_b), (int*)far(lens_b)};
  // inputs packed, outputs far (a builder's own output workspace beside an engine's inputs)
  Bufs outfar{packed.in, packed.t2r, (int4*)far(out_b), (int*)far(lens_b)};
  // outputs packed together but far from the inputs
  char* opack = (char*)far(1 << 20);
  Bufs outpack{packed.in, packed.t2r, (int4*)opack, (int*)(opack + 65536)};
  std::vector<int> t2r(rows, 0);
  for (Bufs* b : {&packed, &sep}) {
    CK(cudaMemset(b->in, 0x3c, in_b)); CK(cudaMemcpy(b->t2r, t2r.data(), t2r_b, cudaMemcpyHostToDevice));
  }
  printf("packed in=%p t2r=%p out=%p lens=%p\nsep in=%p t2r=%p out=%p lens=%p\n", packed.in, packed.t2r, packed.out,
         packed.lens, sep.in, sep.t2r, sep.out, sep.lens);
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto time = [&](auto launch) {
    std::vector<float> us;
    for (int i = 0; i < 230; ++i) {
      flush<<<528, 256, 0, s>>>(fl, fl_n, sink);
      cudaEventRecord(e0, s); launch(); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (i >= 30) us.push_back(ms * 1000);
    }
    std::sort(us.begin(), us.end()); return us[us.size() / 2];
  };
  const char* names[] = {"empty", "packed", "separate", "inputs packed, outputs far", "outputs packed, far from inputs",
                         "packed noreq", "separate noreq"};
  for (int round = 0; round < 3; ++round) {
    float r[7];
    r[0] = time([&] { empty_kernel<<<64, 32, 0, s>>>(); });
    Bufs* bs[] = {&packed, &sep, &outfar, &outpack};
    for (int v = 0; v < 4; ++v) { Bufs b = *bs[v]; r[1 + v] = time([&] { copy_rows<<<rows, 32, 0, s>>>(b.in, b.t2r, b.out, b.lens, 1); }); }
    r[5] = time([&] { copy_rows_noreq<<<rows, 32, 0, s>>>(packed.in, packed.out, packed.lens); });
    r[6] = time([&] { copy_rows_noreq<<<rows, 32, 0, s>>>(sep.in, sep.out, sep.lens); });
    CK(cudaGetLastError());
    for (int i = 0; i < 7; ++i) printf("round %d  %-34s %.3f us\n", round, names[i], r[i]);
  }
  return 0;
}
