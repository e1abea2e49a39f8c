// CUDA implementation of streaming_floors.h (compiled only when DSV4_WITH_CUDA).
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "bench/cuda_call.h"
#include "bench/streaming_floors.h"

namespace dsv4::bench {
namespace {
constexpr int kStreamingThreads = 256;  // the widest CTA of StreamingBytes::kShapes

// Word i of CTA b, thread x, step k: b * kWords * kThreads + k * kThreads + x (each step of a
// warp is 512 contiguous bytes). Words below `reads` are read from src, the next
// `shared_reads` from shared; words below `writes` are written: the word read where there is
// one, else the word's index. Words read but not written are XORed into a value stored to
// `sink` only if it equals kSinkMagic (never, for the buffers' 0x3c fill), so no read is
// optimized away. Waits for the grid before it and lets the next one launch, as a build does
// (no-ops unless launched with programmatic dependent launch).
constexpr int32_t kSinkMagic = 1;

// Loads thread `first`'s kWords words (as above: src below `reads`, then shared, then the index).
template <int kWords, int kThreads>
__device__ __forceinline__ void load_words(const int4* src, int64_t reads, const int4* shared, int64_t all_reads,
                                           int64_t first, int4 (&v)[kWords]) {
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const int64_t i = first + static_cast<int64_t>(k) * kThreads;
    v[k] = i < reads       ? __ldg(src + i)
           : i < all_reads ? __ldg(shared + (i - reads))
                           : make_int4(static_cast<int>(i), 0, 0, 0);
  }
}

// Stores the words below `writes`; the words read and not written go to `sink` (never, above).
template <int kWords, int kThreads>
__device__ __forceinline__ void store_words(int4* dst, int64_t writes, int64_t all_reads, int64_t first,
                                            const int4 (&v)[kWords], int4* sink) {
  int32_t unwritten = 0;
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const int64_t i = first + static_cast<int64_t>(k) * kThreads;
    if (i < writes) {
      dst[i] = v[k];
    } else if (i < all_reads) {
      unwritten ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
  }
  if (unwritten == kSinkMagic) *sink = v[0];
}

__device__ __forceinline__ void wait_prior_grid_and_release_next() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

template <int kWords, int kThreads>
__global__ void __launch_bounds__(kThreads)
    streaming_bytes_kernel(const int4* src, int64_t reads, const int4* shared, int64_t shared_reads, int4* dst,
                           int64_t writes, int4* sink) {
  wait_prior_grid_and_release_next();
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWords * kThreads + threadIdx.x;
  int4 v[kWords];
  load_words<kWords, kThreads>(src, reads, shared, reads + shared_reads, first, v);
  store_words<kWords, kThreads>(dst, writes, reads + shared_reads, first, v, sink);
}

// The byte floor with a planned build's dependent reads (StreamingBytes::launch with hops):
// each thread reads the plan entry of the row its first word falls in (rows of 2^row_shift
// words, entries 8 bytes apart: one a row, as a planned build's rows read theirs), then issues
// its reads, then, for kHops >= 2, reads the table entry the plan entry names; its writes carry
// the last value read (0), so none leaves before the chain ends. The head first, so that its
// latency hides behind the reads: the order that makes the chain cost least. kHops = 3
// (StreamingBytes::kTranslated): each word below `translated` also adds the table entry its
// first value names (0x3c of the 0x3c-filled inputs: entry 60, zero), read once it arrives.
// kHops = kLookups: each of a translated word's four values adds the entry of its low bits
// (lookup_mask) instead.
constexpr int32_t kChainTableEntries = 256;
template <int kWords, int kThreads, int kHops>
__global__ void __launch_bounds__(kThreads)
    chained_bytes_kernel(const int4* src, int64_t reads, int64_t translated, const int4* shared, int64_t shared_reads,
                         int4* dst, int64_t writes, const int2* plan, int32_t row_shift, const int32_t* table,
                         uint32_t lookup_mask, int4* sink) {
  static_assert(kHops >= 1 && kHops <= StreamingBytes::kLookups, "one or two dependent reads, translated or lookups");
  wait_prior_grid_and_release_next();
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWords * kThreads + threadIdx.x;
  // Read first and whole (both chains use x): ptxas then issues it before the other reads.
  const int2 entry = __ldg(plan + (first >> row_shift));
  int4 v[kWords];
  load_words<kWords, kThreads>(src, reads, shared, reads + shared_reads, first, v);
  int32_t carried = entry.y;
  if constexpr (kHops >= 2) {
    carried += __ldg(table + entry.x);
  } else {
    carried += entry.x / kChainTableEntries;  // 0 (x < kChainTableEntries): x read, as hop 2 reads it
  }
#pragma unroll
  for (int k = 0; k < kWords; ++k) v[k].x += carried;
  if constexpr (kHops == StreamingBytes::kTranslated) {
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      if (first + static_cast<int64_t>(k) * kThreads < translated) {
        v[k].x += __ldg(table + (static_cast<uint32_t>(v[k].x) & (kChainTableEntries - 1)));
      }
    }
  }
  if constexpr (kHops == StreamingBytes::kLookups) {
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      if (first + static_cast<int64_t>(k) * kThreads < translated) {
        v[k].x += __ldg(table + (static_cast<uint32_t>(v[k].x) & lookup_mask));
        v[k].y += __ldg(table + (static_cast<uint32_t>(v[k].y) & lookup_mask));
        v[k].z += __ldg(table + (static_cast<uint32_t>(v[k].z) & lookup_mask));
        v[k].w += __ldg(table + (static_cast<uint32_t>(v[k].w) & lookup_mask));
      }
    }
  }
  store_words<kWords, kThreads>(dst, writes, reads + shared_reads, first, v, sink);
}

int64_t words_of(int64_t bytes) { return (bytes + 15) / 16; }

// A device region of max(16, bytes rounded up to 16) bytes, every byte `fill`.
void* filled_region(int64_t bytes, uint8_t fill) {
  return filled_device_region(static_cast<size_t>(std::max<int64_t>(16, words_of(bytes) * 16)), fill,
                              "streaming floor region");
}

// The chains' plan: `entries` entries, entry r naming table entry r % kChainTableEntries (y = 0).
void* chain_plan(int64_t entries) {
  std::vector<int2> plan(static_cast<size_t>(entries));
  for (int64_t r = 0; r < entries; ++r) {
    plan[static_cast<size_t>(r)] = make_int2(static_cast<int>(r % kChainTableEntries), 0);
  }
  void* p = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&p, plan.size() * sizeof(int2)));
  const cudaError_t status = cudaMemcpy(p, plan.data(), plan.size() * sizeof(int2), cudaMemcpyHostToDevice);
  if (status != cudaSuccess) {
    (void)cudaFree(p);
    check(status, "cudaMemcpy(chain plan)", __FILE__, __LINE__);
  }
  return p;
}

// The chains' table: zeros, what the writes carry; kMaxLookupEntries of them (the chains use
// the first kChainTableEntries).
void* chain_table() { return filled_region(StreamingBytes::kMaxLookupEntries * sizeof(int32_t), 0); }

// p[i] = a hash of i (murmur3's finalizer): values whose low bits spread evenly.
__global__ void spread_fill_kernel(uint32_t* p, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) ^ static_cast<uint32_t>(i >> 32);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    p[i] = h;
  }
}

// A region of `bytes` (a multiple of 16), spread_fill_kernel's values, the device synchronized.
void* spread_region(int64_t bytes) {
  void* p = filled_region(bytes, 0);
  spread_fill_kernel<<<1024, 256>>>(static_cast<uint32_t*>(p), bytes / 4);
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    (void)cudaFree(p);
    check(status, "spread_fill_kernel / cudaDeviceSynchronize", __FILE__, __LINE__);
  }
  return p;
}

// Plan entries for grids over `words` words whatever their rows and shapes (rows of 1 word,
// grids of 1 word a thread in CTAs of kStreamingThreads: one a thread of the widest grid).
int64_t chain_plan_entries(int64_t words) {
  return std::max<int64_t>(1, (words + kStreamingThreads - 1) / kStreamingThreads) * kStreamingThreads;
}

// Rows of the largest power of two <= row_words words (a shift, not a division, in the kernel).
int32_t row_shift_of(int64_t row_words) {
  if (row_words < 1) throw std::invalid_argument("streaming kernels: row_words must be >= 1");
  int32_t shift = 0;
  while ((int64_t{2} << shift) <= row_words) ++shift;
  return shift;
}

template <int kWords, int kThreads>
const void* streaming_kernel_of(int hops) {
  return hops == 0   ? reinterpret_cast<const void*>(&streaming_bytes_kernel<kWords, kThreads>)
         : hops == 1 ? reinterpret_cast<const void*>(&chained_bytes_kernel<kWords, kThreads, 1>)
         : hops == 2 ? reinterpret_cast<const void*>(&chained_bytes_kernel<kWords, kThreads, 2>)
         : hops == StreamingBytes::kTranslated
             ? reinterpret_cast<const void*>(&chained_bytes_kernel<kWords, kThreads, StreamingBytes::kTranslated>)
             : reinterpret_cast<const void*>(&chained_bytes_kernel<kWords, kThreads, StreamingBytes::kLookups>);
}

template <int kThreads>
const void* streaming_kernel_of(int words, int hops) {
  return words == 1   ? streaming_kernel_of<1, kThreads>(hops)
         : words == 2 ? streaming_kernel_of<2, kThreads>(hops)
         : words == 4 ? streaming_kernel_of<4, kThreads>(hops)
                      : nullptr;
}

// One streaming launch of `shape` (one of StreamingBytes::kShapes), `hops` 0 to kMaxHops; reads
// from src (the first `translated` words translated, kTranslated: both callers check it is within
// the bytes read, in their bytes) then shared, writes to dst (also the never-written sink), plan
// and table for the chains, lookup_entries (kLookups: a power of two, <= kMaxLookupEntries).
void launch_streaming(void* stream, StreamingShape shape, int hops, const int4* src, int64_t reads,
                      int64_t translated, const int4* shared, int64_t shared_reads, int4* dst, int64_t writes,
                      const void* plan, int64_t row_words, const void* table, int32_t lookup_entries, int4* sink,
                      bool programmatic_launch) {
  if (hops < 0 || hops > StreamingBytes::kMaxHops) {
    throw std::invalid_argument("streaming kernels: hops must be 0, 1, 2, 3 (translated) or 4 (lookups)");
  }
  if (lookup_entries < 1 || lookup_entries > StreamingBytes::kMaxLookupEntries ||
      (lookup_entries & (lookup_entries - 1)) != 0) {
    throw std::invalid_argument("streaming kernels: lookup_entries " + std::to_string(lookup_entries) +
                                " is not a power of two in [1, " + std::to_string(StreamingBytes::kMaxLookupEntries) +
                                "]");
  }
  uint32_t lookup_mask = static_cast<uint32_t>(lookup_entries - 1);
  const void* kernel = shape.threads == kStreamingThreads ? streaming_kernel_of<kStreamingThreads>(shape.words, hops)
                       : shape.threads == 32              ? streaming_kernel_of<32>(shape.words, hops)
                                                          : nullptr;
  if (kernel == nullptr) throw std::invalid_argument("streaming kernels: shape not one of StreamingBytes::kShapes");
  int32_t row_shift = row_shift_of(row_words);
  const int64_t per_cta = int64_t{shape.words} * shape.threads;
  const int64_t ctas = std::max<int64_t>(1, (std::max(reads + shared_reads, writes) + per_cta - 1) / per_cta);
  const int2* plan_entries = static_cast<const int2*>(plan);
  const int32_t* table_entries = static_cast<const int32_t*>(table);
  void* streaming_params[] = {&src, &reads, &shared, &shared_reads, &dst, &writes, &sink};
  void* chained_params[] = {&src,          &reads,     &translated,    &shared,      &shared_reads, &dst,
                            &writes,       &plan_entries, &row_shift, &table_entries, &lookup_mask, &sink};
  launch_ex_checked(kernel, static_cast<unsigned>(ctas), static_cast<unsigned>(shape.threads),
                    hops == 0 ? streaming_params : chained_params, programmatic_launch, stream,
                    "cudaLaunchKernelExC(streaming_bytes_kernel / chained_bytes_kernel) / cudaGetLastError");
}
}  // namespace

StreamingBytes::~StreamingBytes() {
  (void)cudaFree(src_);
  (void)cudaFree(spread_src_);
  (void)cudaFree(dst_);
  (void)cudaFree(plan_);
  (void)cudaFree(table_);
}

void StreamingBytes::reserve(int64_t read_bytes, int64_t write_bytes) {
  if (read_bytes < 0 || write_bytes < 0) throw std::invalid_argument("StreamingBytes: negative size");
  const auto grow = [](void*& p, int64_t& have, int64_t want) {
    want = words_of(want) * 16;
    if (want <= have) return;
    (void)cudaFree(p);
    p = nullptr;
    have = 0;
    p = filled_region(want, 0x3c);
    have = want;
  };
  const int64_t src_had = src_bytes_;
  grow(src_, src_bytes_, read_bytes);
  grow(dst_, dst_bytes_, write_bytes);
  if (spread_src_ == nullptr || src_bytes_ != src_had) {  // spread_src_ keeps src_'s size
    (void)cudaFree(spread_src_);
    spread_src_ = nullptr;  // not left dangling if spread_region throws
    spread_src_ = spread_region(src_bytes_);
  }
  const int64_t entries = chain_plan_entries(std::max(words_of(read_bytes), words_of(write_bytes)));
  if (entries > plan_entries_) {
    (void)cudaFree(plan_);
    plan_ = nullptr;
    plan_entries_ = 0;
    plan_ = chain_plan(entries);
    plan_entries_ = entries;
  }
  if (table_ == nullptr) table_ = chain_table();
}

void StreamingBytes::launch(void* stream, int64_t read_bytes, int64_t write_bytes, StreamingShape shape, int hops,
                            int64_t row_words, int64_t translated_bytes, int32_t lookup_entries) {
  if (read_bytes < 0 || write_bytes < 0 || words_of(read_bytes) * 16 > src_bytes_ ||
      words_of(write_bytes) * 16 > dst_bytes_) {
    throw std::invalid_argument("StreamingBytes::launch: sizes outside reserve()'s");
  }
  if (translated_bytes < 0 || translated_bytes > read_bytes) {
    throw std::invalid_argument("StreamingBytes::launch: translated bytes outside the bytes read");
  }
  // A plain launch, as kernel_bench launches the builds it times.
  const void* src = hops == kLookups ? spread_src_ : src_;
  launch_streaming(stream, shape, hops, static_cast<const int4*>(src), words_of(read_bytes), words_of(translated_bytes),
                   nullptr, 0, static_cast<int4*>(dst_), words_of(write_bytes), plan_, row_words, table_,
                   lookup_entries, static_cast<int4*>(dst_), false);
}

StreamingSequence::StreamingSequence(std::vector<StreamedBuild> builds) : builds_(std::move(builds)) {
  int64_t shared_bytes = 0, widest_words = 0;
  std::vector<int64_t> input_bytes, output_bytes;
  const auto grow = [](std::vector<int64_t>& sizes, int id, int64_t bytes) {
    if (id < 0) throw std::invalid_argument("StreamingSequence: negative region id");
    if (sizes.size() <= static_cast<size_t>(id)) sizes.resize(static_cast<size_t>(id) + 1, 0);
    sizes[static_cast<size_t>(id)] = std::max(sizes[static_cast<size_t>(id)], bytes);
  };
  for (const StreamedBuild& b : builds_) {
    if (b.own_read_bytes < 0 || b.shared_read_bytes < 0 || b.write_bytes < 0) {
      throw std::invalid_argument("StreamingSequence: negative size");
    }
    if (b.translated_read_bytes < 0 || b.translated_read_bytes > b.own_read_bytes) {
      throw std::invalid_argument("StreamingSequence: translated bytes outside the build's own inputs");
    }
    (void)row_shift_of(b.row_words);  // throws on rows below one word
    grow(input_bytes, b.input, b.own_read_bytes);
    grow(output_bytes, b.output, b.write_bytes);
    shared_bytes = std::max(shared_bytes, b.shared_read_bytes);
    widest_words = std::max({widest_words, words_of(b.own_read_bytes) + words_of(b.shared_read_bytes),
                             words_of(b.write_bytes)});
  }
  try {
    shared_ = filled_region(shared_bytes, 0x3c);
    sink_ = filled_region(16, 0);
    for (int64_t bytes : input_bytes) inputs_.push_back(filled_region(bytes, 0x3c));
    for (int64_t bytes : output_bytes) outputs_.push_back(filled_region(bytes, 0));
    plan_ = chain_plan(chain_plan_entries(widest_words));
    table_ = chain_table();
  } catch (...) {
    release();
    throw;
  }
}

void StreamingSequence::release() {
  for (void* p : inputs_) (void)cudaFree(p);
  for (void* p : outputs_) (void)cudaFree(p);
  (void)cudaFree(shared_);
  (void)cudaFree(sink_);
  (void)cudaFree(plan_);
  (void)cudaFree(table_);
  inputs_.clear();
  outputs_.clear();
  shared_ = sink_ = plan_ = table_ = nullptr;
}

StreamingSequence::~StreamingSequence() { release(); }

void StreamingSequence::launch(void* stream, StreamingShape shape, int hops) {
  if (hops > StreamingBytes::kTranslated) throw std::invalid_argument("StreamingSequence: hops above kTranslated");
  for (const StreamedBuild& b : builds_) {
    launch_streaming(stream, shape, hops, static_cast<const int4*>(inputs_[static_cast<size_t>(b.input)]),
                     words_of(b.own_read_bytes), words_of(b.translated_read_bytes), static_cast<const int4*>(shared_),
                     words_of(b.shared_read_bytes),
                     static_cast<int4*>(outputs_[static_cast<size_t>(b.output)]), words_of(b.write_bytes), plan_,
                     b.row_words, table_, 1, static_cast<int4*>(sink_), true);
  }
}


}  // namespace dsv4::bench
