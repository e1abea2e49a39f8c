// CUDA kernels of build_mixed_sparse_indices (SPEC §3) over the shared row logic
// (mixed_sparse_indices_row.h), and their launcher.
#include <cuda_runtime.h>

#include <type_traits>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <vector>

#include "kernels/decode_chunk_args.h"
#include "kernels/mixed_sparse_indices_launch.h"
#include "kernels/mixed_sparse_indices_policy.h"
#include "kernels/mixed_sparse_indices_row.h"
#include "kernels/multi_build.h"
#include "kernels/prefill_rows_args.h"

namespace dsv4::kernels {
namespace {

using Policy = MixedSparseIndicesPolicy;
constexpr int kCta = Policy::kCtaThreads;
constexpr int kWarp = Policy::kWarpThreads;

// Programmatic dependent launch (no-ops when the launch did not ask for it, and before
// sm_90): every kernel waits for the grid before it on the stream to complete, and its memory
// to be visible, before reading anything, and lets the grid after it launch as soon as all of
// its own CTAs have started (that grid waits for this one's completion in turn).
__device__ __forceinline__ void begin_after_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Sum over aligned groups of kLanes lanes (a power of two <= 32); every lane of the warp calls.
template <int kLanes>
__device__ __forceinline__ int32_t lanes_sum(int32_t value) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

// Sum of `value` over the kGroupThreads threads that own a row, in every thread of the group.
// Every thread of the CTA must call it (a group wider than a warp meets at a barrier).
template <int kGroupThreads>
__device__ __forceinline__ int32_t group_sum(int32_t value) {
  if constexpr (kGroupThreads <= kWarp) {
    return lanes_sum<kGroupThreads>(value);
  } else {
    __shared__ int32_t warp_partials[kCta / kWarp];
    value = lanes_sum<kWarp>(value);
    const int warp = static_cast<int>(threadIdx.x) / kWarp;
    if (threadIdx.x % kWarp == 0) warp_partials[warp] = value;
    __syncthreads();
    constexpr int kWarpsPerGroup = kGroupThreads / kWarp;
    const int first = warp / kWarpsPerGroup * kWarpsPerGroup;
    int32_t total = 0;
#pragma unroll
    for (int w = 0; w < kWarpsPerGroup; ++w) total += warp_partials[first + w];
    return total;
  }
}

// One CTA = kCta threads in groups of kGroupThreads; a group owns one row (token) for the
// kernel's whole life: grid = ceil(T / rows per CTA), no grid-stride loop, so every row's
// dependent loads (token_to_req -> request metadata -> block table) are in flight at once as
// far as CTAs fit, and the hardware fills the SMs as CTAs finish (block b builds CTA
// cta_of_block(b), chosen in build_cta: the heaviest rows first).
// Within a row, thread `rank` handles chunks rank, rank + kGroupThreads, ... in passes of
// kChunks (kVec4: 16-byte chunks, consecutive ranks store consecutive 16 bytes), the first
// pass's input loads issued before the row's plan (build_row_share). kPowerOfTwo: both block
// sizes are powers of two (shift and mask). Rank 0 writes sparse_lens[t], after summing the
// group's picks when the step has local-form decode rows. Content errors are counted per
// thread, warp-reduced once and added to the device counter by one atomicAdd per warp that
// saw any.
// kChecked (SPEC §7 run-time sizes): the grid covers the row capacity T_cap; the step's T, D
// and R are read first (resolve_run_time_sizes), rows [T, T_cap) are padding and rows whose
// metadata breaks the checks are written -1 (plan_row<true>).
// `cta`: the CTA's index among the build's CTAs (blockIdx.x for a launch of one build).
template <int kGroupThreads, int kChunks, bool kPowerOfTwo, bool kVec4, RowKinds kRows, bool kChecked, bool kParts,
          bool kGatherLookups = false>
__device__ __forceinline__ void build_cta_rows(const MixedSparseIndicesArgs& args, uint32_t cta) {
  constexpr int32_t kRowsPerCta = kCta / kGroupThreads;
  const int32_t rank = static_cast<int32_t>(threadIdx.x) % kGroupThreads;
  const int64_t t = static_cast<int64_t>(cta) * kRowsPerCta + threadIdx.x / kGroupThreads;
  const bool active = t < args.num_tokens;
  int32_t errors = 0;
  RowShare share{};
  if (active) {
    share = build_row_share<kPowerOfTwo, kVec4, kChunks, kRows, kChecked, kParts, kGatherLookups>(
        args, static_cast<int32_t>(t), rank, kGroupThreads, &errors);
  } else if (kChecked && t < args.num_rows) {
    write_padding_row<kVec4, kParts>(args, static_cast<int32_t>(t), rank, kGroupThreads);
  }
  int32_t picks = share.picks;
  if (kRows != RowKinds::kPrefill && args.decode_local && args.num_decode_tokens > 0) {
    picks = group_sum<kGroupThreads>(picks);
  }
  if (active && rank == 0) finish_row<kChecked, kParts>(args, share, picks, &errors);
  errors = lanes_sum<kWarp>(errors);
  if (threadIdx.x % kWarp == 0 && errors != 0) {
    atomicAdd(args.content_errors, static_cast<unsigned long long>(errors));
  }
}

// The CTAs of a launch that hold decode rows (decode_ctas_of): all of a decode-only launch,
// none of a prefill-only one.
template <int kGroupThreads, RowKinds kRows>
__device__ __forceinline__ uint32_t decode_ctas(int32_t num_decode_tokens) {
  return kRows == RowKinds::kDecode    ? gridDim.x
         : kRows == RowKinds::kPrefill ? 0u
                                       : decode_ctas_of(num_decode_tokens, kCta / kGroupThreads);
}

// Builds the CTA of block blockIdx.x (cta_of_block: a launch's decode CTAs first, then its
// prefill CTAs from the last). In an unchecked launch of both row kinds on the fast path, a CTA
// without decode rows (all but the one that straddles D) runs the prefill-only code (the choice
// is the CTA's, so its barriers stay uniform). Compiled as one, the code of both kinds ran the
// same prefill rows slower (Nsight: more cycles per instruction;
// bench/results/2026-12-04-h200-checks-off-chain/): this way the
// planned Flash C4A build with 32 decodes took 11.87-11.98 us against 12.33-12.35
// (bench/results/2026-12-04-h200-prefill-ctas/), the eager cached step of 32 decodes + 8K prefill
// 245.0 us against 250.3 (Flash), 555.7 against 560.7 (Pro). Not in checked builds (step graphs)
// nor in the SPEC §8 one-launch kernel: there the same choice made the mixed step graphs 3-12 us
// slower (Flash 223.1 against 219.0, Pro 508.8 against 500.9) and Flash's eager split one-launch
// step 254.5 against 242.9 (bench/results/2026-12-04-h200-prefill-ctas-where/).
template <int kGroupThreads, int kChunks, bool kPowerOfTwo, bool kVec4, RowKinds kRows, bool kChecked, bool kParts>
__device__ __forceinline__ void build_cta(const MixedSparseIndicesArgs& args) {
  const uint32_t decode = decode_ctas<kGroupThreads, kRows>(args.num_decode_tokens);
  const uint32_t cta = cta_of_block(blockIdx.x, gridDim.x, decode);
  if constexpr (kRows == RowKinds::kBoth && kPowerOfTwo && kVec4 && !kChecked) {
    if (cta >= decode) {  // no decode row in this CTA
      build_cta_rows<kGroupThreads, kChunks, kPowerOfTwo, kVec4, RowKinds::kPrefill, kChecked, kParts>(args, cta);
      return;
    }
  }
  build_cta_rows<kGroupThreads, kChunks, kPowerOfTwo, kVec4, kRows, kChecked, kParts>(args, cta);
}

template <int kGroupThreads, int kChunks, bool kPowerOfTwo, bool kVec4, RowKinds kRows, bool kChecked = false,
          bool kParts = false>
__global__ void __launch_bounds__(kCta, Policy::min_ctas_per_sm(kChunks)) mixed_sparse_indices_kernel(const MixedSparseIndicesArgs args) {
  begin_after_prior_grid();
  if constexpr (kChecked) {
    MixedSparseIndicesArgs step = args;  // the capacities replaced by the step's sizes
    resolve_run_time_sizes(step);
    build_cta<kGroupThreads, kChunks, kPowerOfTwo, kVec4, kRows, true, kParts>(step);
  } else {
    build_cta<kGroupThreads, kChunks, kPowerOfTwo, kVec4, kRows, false, kParts>(args);
  }
}

// An unchecked build of prefill rows only on the fast path, whole or a part, takes the short
// argument (prefill_rows_args.h), as the decode-chunk builds do: 0.15-0.3 us less per build.
// kGatherLookups: the gathered-lookups form (prefill_gathers_lookups), whole rows only.
template <int kGroupThreads, bool kParts, bool kGatherLookups = false>
__global__ void __launch_bounds__(kCta, Policy::min_ctas_per_sm(Policy::kDefaultChunks))
    prefill_rows_kernel(const PrefillRowsArgs args) {
  static_assert(!(kGatherLookups && kParts), "the gathered-lookups form builds whole rows");
  begin_after_prior_grid();
  build_cta_rows<kGroupThreads, Policy::kDefaultChunks, true, true, RowKinds::kPrefill, false, kParts, kGatherLookups>(
      args.expand(), cta_of_block(blockIdx.x, gridDim.x, 0));  // no decode CTAs: from the last
}

// SPEC §8 one launch: several builds of one step, build b in its own range of CTAs (rows to
// groups as above, with one group size for all). The builds' arguments are read in place from
// the parameter space (__grid_constant__), so indexing them by b copies nothing.
template <int kGroupThreads, int kChunks, bool kPowerOfTwo, bool kVec4, RowKinds kRows>
__global__ void __launch_bounds__(kCta, Policy::min_ctas_per_sm(kChunks))
    multi_build_kernel(const __grid_constant__ MultiBuildArgs m) {
  begin_after_prior_grid();
  // Several builds: a decode-only launch in block order, any other from its last CTA.
  const uint32_t cta = kRows == RowKinds::kDecode ? blockIdx.x : cta_of_block(blockIdx.x, gridDim.x, 0);
  const int b = build_of_cta(m, cta);
  build_cta_rows<kGroupThreads, kChunks, kPowerOfTwo, kVec4, kRows, false, true>(m.builds[b], cta - m.first_cta[b]);
}

// SPEC §7 status of a step's metadata: the threads of one CTA (any size) check every request
// and token (CTA-stride), merge the threads' first failures (smallest (check, row)) and
// counts, and overwrite *status. The builds skip the rows these checks break on their own
// (row_metadata_valid).
__device__ __forceinline__ void check_step_metadata(const MixedSparseIndicesArgs& args, MetadataStatus* status) {
  __shared__ unsigned long long first_key;
  __shared__ unsigned int failures;
  __shared__ int32_t first_value;
  if (threadIdx.x == 0) {
    first_key = ~0ull;
    failures = 0;
    first_value = 0;
  }
  __syncthreads();
  MixedSparseIndicesArgs step = args;
  const StepSizes sizes{load_input(&args.run_time_sizes->num_tokens), load_input(&args.run_time_sizes->num_decode_tokens),
                        load_input(&args.run_time_sizes->num_requests)};
  FailureTally tally;
  const bool fit = sizes_fit(args, sizes, &tally);  // every thread: only thread 0 records
  if (threadIdx.x != 0) tally = FailureTally{};
  if (fit) {
    step.num_tokens = sizes.num_tokens;
    step.num_decode_tokens = sizes.num_decode_tokens;
    step.num_requests = sizes.num_requests;
    const int32_t threads = static_cast<int32_t>(blockDim.x);
    for (int32_t r = static_cast<int32_t>(threadIdx.x); r <= step.num_requests; r += threads) {
      check_request(step, r, &tally);
    }
    for (int32_t t = static_cast<int32_t>(threadIdx.x); t < step.num_tokens; t += threads) {
      check_token(step, t, &tally);
    }
  }
  if (tally.failures != 0) {
    atomicMin(&first_key, static_cast<unsigned long long>(tally.first_key));
    atomicAdd(&failures, tally.failures);
  }
  __syncthreads();
  // (check, row) pairs are checked by one thread each: exactly one holds the first.
  if (tally.failures != 0 && tally.first_key == first_key) first_value = tally.first_value;
  __syncthreads();
  if (threadIdx.x == 0) *status = status_of(first_key, first_value, failures);
}

constexpr int kCheckThreads = 1024;
__global__ void __launch_bounds__(kCheckThreads) metadata_check_kernel(const MixedSparseIndicesArgs args,
                                                                       MetadataStatus* status) {
  begin_after_prior_grid();
  check_step_metadata(args, status);
}

// What a decode row's compressed columns hold: nothing (Kd = 0), global slots (copied) or
// local indices (translated). A decode-only step's kernel compiles only its form's code.
enum class DecodeForm : uint8_t { kWindowOnly, kGlobal, kLocal };

// Decode-only steps with rows of at most kDecodeRowMaxChunks 16-byte chunks (16-byte rows,
// power-of-two blocks): a CTA per row, a thread per chunk, one form's straight-line code.
// A decode build lasts a few us and its code is cold after every other kernel: instruction
// fetch dominated it in the group kernel (bench/results/), so this kernel is kept short; its
// loads (token_to_req, the chunk's input) are in flight together, then the table. The same
// values as the row logic (finish_chunk, row_length), written out for the three forms. Thread
// k owns the k-th chunk of the columns the build writes (SPEC §8 parts: first_column on).
// kChecked (SPEC §7, a decode graph: no prefill capacity): the grid covers T_cap rows; the
// step's sizes are loaded with the row's first loads (reads stay inside the capacities), rows
// [T, T_cap) are padding, a row whose metadata breaks the checks (row_metadata_valid, its
// request's entries read only once the request is known to be < R) is -1 with length 0 and no
// content error. With `status`, one more CTA checks the step's metadata and writes it, so a
// step graph needs no separate check launch.
template <DecodeForm kForm, bool kChecked, bool kParts>
__device__ __forceinline__ void build_decode_chunk(const MixedSparseIndicesArgs& args, MetadataStatus* status) {
  if constexpr (kChecked) {
    if (status != nullptr && blockIdx.x == gridDim.x - 1) {
      check_step_metadata(args, status);
      return;
    }
  }
  const int32_t t = static_cast<int32_t>(blockIdx.x);
  const int32_t k = static_cast<int32_t>(threadIdx.x);
  using Columns = RowColumns<kParts>;
  const int32_t c0 = Columns::first(args) + 4 * k;
  const bool written = c0 < Columns::end(args);  // threads past the part: nothing read, looked up or stored
  const int32_t j0 = c0 - args.window;  // the chunk's first compressed column (< 0: window)
  // Unchecked, row t is a decode row; checked, t < T_cap and the inputs hold D_cap rows.
  const bool has_input_row = !kChecked || t < args.num_decode_tokens;
  StepSizes sizes{};
  if constexpr (kChecked) {
    sizes = StepSizes{load_input(&args.run_time_sizes->num_tokens),
                      load_input(&args.run_time_sizes->num_decode_tokens),
                      load_input(&args.run_time_sizes->num_requests)};
  }
  const int32_t request = load_input(args.token_to_req + t);
  int32_t v[4] = {-1, -1, -1, -1};
  int32_t length_input = 1;  // decode_compressed_lens[t] (global) or decode_valid[t] (local)
  if (has_input_row && written) {
    if (j0 < 0) {
      load_stream4(args.decode_swa_indices + static_cast<int64_t>(t) * args.decode_swa_stride + c0, v);
    } else if constexpr (kForm != DecodeForm::kWindowOnly) {
      // Columns j < Kd hold values (threads past the row have j0 >= P >= Kd: nothing read).
      const int32_t* in = args.decode_compressed + static_cast<int64_t>(t) * args.decode_compressed_stride + j0;
      if (j0 + 4 <= args.decode_width) {
        load_stream4(in, v);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = j0 + e < args.decode_width ? load_input(in + e) : -1;
      }
    }
  }
  if (has_input_row) {
    // Thread 0 writes the length; checked, every thread needs it for the row's checks, which
    // also hold a window-only row's global lens to [0, Kd = 0].
    if (kChecked || k == 0) {
      if (kForm != DecodeForm::kLocal && !args.decode_local && args.decode_compressed_lens != nullptr &&
          (kChecked || kForm == DecodeForm::kGlobal)) {
        length_input = load_input(args.decode_compressed_lens + t);
      }
      if (kForm == DecodeForm::kLocal && args.decode_valid != nullptr) length_input = args.decode_valid[t];
    }
  }
  MixedSparseIndicesArgs a = args;
  bool padding = false;
  if constexpr (kChecked) {
    FailureTally ignored;
    const bool fit = sizes_fit(args, sizes, &ignored);
    a.num_tokens = fit ? sizes.num_tokens : 0;
    a.num_decode_tokens = fit ? sizes.num_decode_tokens : 0;
    a.num_requests = fit ? sizes.num_requests : 0;
    padding = t >= a.num_tokens;  // a fitting decode graph has D == T: every row < T decodes
  }
  bool in_range = !padding && static_cast<uint32_t>(request) < static_cast<uint32_t>(a.num_requests);
  int32_t begin = 0, end = 0, seq_len = 0;
  if (kChecked && in_range) {  // the request's entries, in flight with the table reads below
    begin = load_input(a.query_start_loc + request);
    end = load_input(a.query_start_loc + request + 1);
    seq_len = load_input(a.seq_lens + request);
  }
  int32_t errors = 0;
  int32_t picks = 0;
  if constexpr (kForm == DecodeForm::kLocal) {
    if (written && j0 >= 0 && in_range) {
      const int32_t* table = a.compressed.row(request);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        picks += v[e] >= 0 ? 1 : 0;
        v[e] = a.compressed.lookup<true>(table, v[e], v[e] >= 0, &errors);
      }
    }
  }
  bool metadata_broken = false;  // checked: the row is -1, length 0, and counts no error
  if constexpr (kChecked) {
    if (in_range) metadata_broken = !row_metadata_valid(a, t, true, begin, end, seq_len, length_input);
    if (metadata_broken || padding || !in_range) {
      in_range = false;
      errors = 0;
      picks = 0;
    }
  }
  if (written) {
    if (!in_range) {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = -1;
    }
    store_chunk<4>(a.sparse_indices + static_cast<int64_t>(t) * a.output_stride + (c0 - Columns::shift(a)), v);
  }
  if constexpr (kForm == DecodeForm::kLocal) {  // the row's length counts its picks
    __shared__ int32_t warp_picks[Policy::kDecodeRowMaxChunks / kWarp];
    picks = lanes_sum<kWarp>(picks);
    if (k % kWarp == 0) warp_picks[k / kWarp] = picks;
    __syncthreads();
    if (k == 0) {
      for (int32_t w = 1; w < static_cast<int32_t>(blockDim.x) / kWarp; ++w) picks += warp_picks[w];
    }
    errors = lanes_sum<kWarp>(errors);
  }
  if (k == 0) {
    int32_t compressed_length = 0;
    if (kForm == DecodeForm::kGlobal) compressed_length = a.decode_compressed_lens != nullptr ? length_input : a.decode_width;
    if (kForm == DecodeForm::kLocal) compressed_length = length_input != 0 ? picks : 0;
    if (Columns::writes_lens(a)) {
      a.sparse_lens[t] = in_range ? a.window + compressed_length - Columns::length_offset(a) : 0;  // not built: 0
    }
    // Unchecked, a request out of range is a content error; checked, the status reports it.
    if (!kChecked && !in_range) ++errors;
  }
  if (k % kWarp == 0 && errors != 0) atomicAdd(a.content_errors, static_cast<unsigned long long>(errors));
}

// Unchecked builds take the short argument (decode_chunk_args.h: launches of a few-us build
// pay for every byte of it); checked ones the whole struct, which the metadata checks read.
template <DecodeForm kForm, bool kParts>
__global__ void __launch_bounds__(Policy::kDecodeRowMaxChunks) decode_chunk_kernel(const DecodeChunkArgs args) {
  begin_after_prior_grid();
  build_decode_chunk<kForm, false, kParts>(args.expand(), nullptr);
}

template <DecodeForm kForm, bool kParts>
__global__ void __launch_bounds__(Policy::kDecodeRowMaxChunks)
    checked_decode_chunk_kernel(const MixedSparseIndicesArgs args, MetadataStatus* status) {
  begin_after_prior_grid();
  build_decode_chunk<kForm, true, kParts>(args, status);
}

using KernelFunction = void (*)(MixedSparseIndicesArgs);

// The compiled group sizes, run-time to compile-time: kernel_of(std::integral_constant<int, G>{})
// for G = group_threads (8 .. 256; anything else takes 256), for every kernel family's chooser.
template <class KernelOf>
auto for_group_threads(int32_t group_threads, KernelOf kernel_of) {
  switch (group_threads) {
    case 8: return kernel_of(std::integral_constant<int, 8>{});
    case 16: return kernel_of(std::integral_constant<int, 16>{});
    case 32: return kernel_of(std::integral_constant<int, 32>{});
    case 64: return kernel_of(std::integral_constant<int, 64>{});
    case 128: return kernel_of(std::integral_constant<int, 128>{});
    default: return kernel_of(std::integral_constant<int, 256>{});
  }
}

template <int kChunks, bool kPowerOfTwo, bool kVec4, RowKinds kRows, bool kChecked = false, bool kParts = false>
KernelFunction kernel_for_group(int32_t group_threads) {
  return for_group_threads(group_threads, [](auto g) -> KernelFunction {
    return &mixed_sparse_indices_kernel<decltype(g)::value, kChunks, kPowerOfTwo, kVec4, kRows, kChecked, kParts>;
  });
}

// The scalar path (W % 4 != 0 or unaligned output) is rare: a warp per narrow row, a CTA
// per wide one, any row kinds.
constexpr int32_t kScalarNarrowColumns = 256;

template <bool kPowerOfTwo, bool kChecked>
KernelFunction scalar_kernel(int32_t group_threads) {
  constexpr int kChunks = Policy::kDefaultChunks;
  constexpr RowKinds kAny = RowKinds::kBoth;
  return group_threads == kWarp ? &mixed_sparse_indices_kernel<kWarp, kChunks, kPowerOfTwo, false, kAny, kChecked, true>
                                : &mixed_sparse_indices_kernel<kCta, kChunks, kPowerOfTwo, false, kAny, kChecked, true>;
}

// A 16-byte-row kernel of the given row kinds for group_threads: whole rows, or a SPEC §8 part.
template <bool kPowerOfTwo, RowKinds kRows, bool kChecked>
KernelFunction vector_kernel(int32_t group_threads, bool parts) {
  constexpr int kChunks = Policy::kDefaultChunks;
  static_assert(sizeof(Policy::kChunkChoices) / sizeof(Policy::kChunkChoices[0]) == 1 &&
                    Policy::kChunkChoices[0] == kChunks,
                "one chunk count is compiled");
  return parts ? kernel_for_group<kChunks, kPowerOfTwo, true, kRows, kChecked, true>(group_threads)
               : kernel_for_group<kChunks, kPowerOfTwo, true, kRows, kChecked, false>(group_threads);
}

// The common path (power-of-two blocks, 16-byte rows) is specialised by the step's row kinds:
// a decode-only launch, whole or a SPEC §8 part, runs a kernel of half the code (a prefill-only
// one takes prefill_rows_kernel before it gets here); other parts take the general kernel of
// both row kinds.
KernelFunction select_kernel(const LaunchShape& shape, bool power_of_two, bool vec4, RowKinds rows, bool parts) {
  const int32_t g = shape.group_threads;
  if (!vec4) return power_of_two ? scalar_kernel<true, false>(g) : scalar_kernel<false, false>(g);
  if (!power_of_two) return vector_kernel<false, RowKinds::kBoth, false>(g, parts);
  return rows == RowKinds::kDecode ? vector_kernel<true, RowKinds::kDecode, false>(g, parts)
                                   : vector_kernel<true, RowKinds::kBoth, false>(g, parts);
}

// The run-time-sizes kernels (SPEC §7): decode-only when the capacities allow no prefill row
// (a decode graph), prefill-only when they allow no decode row (a prefill graph), else both
// kinds; whole rows, or a SPEC §8 part (a split step graph's builds). The rare paths (scalar,
// blocks of other sizes) serve both forms in one kernel.
KernelFunction select_checked_kernel(const LaunchShape& shape, bool power_of_two, bool vec4, RowKinds rows,
                                     bool parts) {
  const int32_t g = shape.group_threads;
  if (!vec4) return power_of_two ? scalar_kernel<true, true>(g) : scalar_kernel<false, true>(g);
  if (!power_of_two) {
    return kernel_for_group<Policy::kDefaultChunks, false, true, RowKinds::kBoth, true, true>(g);
  }
  switch (rows) {
    case RowKinds::kDecode: return vector_kernel<true, RowKinds::kDecode, true>(g, parts);
    case RowKinds::kPrefill: return vector_kernel<true, RowKinds::kPrefill, true>(g, parts);
    case RowKinds::kBoth: break;
  }
  return vector_kernel<true, RowKinds::kBoth, true>(g, parts);
}

template <bool kParts>
const void* prefill_rows_kernel_for(int32_t group_threads) {
  return for_group_threads(group_threads, [](auto g) {
    return reinterpret_cast<const void*>(&prefill_rows_kernel<decltype(g)::value, kParts>);
  });
}

// The gathered-lookups form (whole rows) for group_threads.
const void* gathered_prefill_rows_kernel_for(int32_t group_threads) {
  return for_group_threads(group_threads, [](auto g) {
    return reinterpret_cast<const void*>(&prefill_rows_kernel<decltype(g)::value, false, true>);
  });
}

using MultiKernelFunction = void (*)(MultiBuildArgs);

template <RowKinds kRows>
MultiKernelFunction multi_kernel_for_group(int32_t group_threads) {
  return for_group_threads(group_threads, [](auto g) -> MultiKernelFunction {
    return &multi_build_kernel<decltype(g)::value, Policy::kDefaultChunks, true, true, kRows>;
  });
}

KernelStatus failure(cudaError_t status, const char* call, int line) {
  return KernelStatus{static_cast<int>(status), call, __FILE__, line};
}

}  // namespace

KernelStatus prepare_mixed_sparse_indices_launch(int device, MixedSparseIndicesLaunchConfig* config) {
  int sm_count = 0;
  const cudaError_t status = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  if (status != cudaSuccess) return failure(status, "cudaDeviceGetAttribute(MultiProcessorCount)", __LINE__);
  config->sm_count = sm_count;
  return KernelStatus{};
}

LaunchShape mixed_sparse_indices_launch_shape(const MixedSparseIndicesArgs& args,
                                              const MixedSparseIndicesLaunchConfig& config) {
  const int32_t columns = args.end_column - args.first_column;  // written per row
  if (!args.vector_path) {
    return LaunchShape{columns <= kScalarNarrowColumns ? kWarp : kCta, Policy::kDefaultChunks};
  }
  const int32_t row_chunks = columns / 4;
  const bool checked = args.run_time_sizes != nullptr;
  // Decode-only rows: the step's (unchecked), or the capacities' (checked: no prefill row fits).
  const bool decode_only = checked ? args.prefill_rows == 0 : args.num_decode_tokens == args.num_tokens;
  if (config.forced.decode_chunks || (!valid_group_threads(config.forced.group_threads) && decode_only)) {
    // Decode-chunk kernel where it applies (forced or decode-only), else the policy's groups.
    if (decode_only && args.power_of_two_blocks && fits_decode_chunks(row_chunks)) {
      return decode_chunk_shape(row_chunks);
    }
  }
  LaunchShape shape = valid_group_threads(config.forced.group_threads)
                          ? config.forced
                          : choose_launch_shape(checked ? args.num_rows : args.num_tokens, row_chunks,
                                                config.sm_count);
  shape.chunks = Policy::kDefaultChunks;  // the one count compiled
  shape.decode_chunks = false;
  return shape;
}

namespace {

// The build kernels launch through the driver's cuLaunchKernelEx, each kernel's CUfunction
// looked up once per device and thread, instead of the runtime's cudaLaunchKernelExC (its
// function lookup and checks on every launch): an empty kernel's launch took 0.09-0.43 us less
// host time this way in four runs on two H200 machines (e.g. 3.62 against 4.05 us;
// bench/results/2026-12-05-h200-driver-launch/). Where the driver has no cuLaunchKernelEx, the
// runtime launches (launch_kernel_runtime). A failed driver launch is reported under its call
// site's name ("cudaLaunchKernelExC(...)") with the driver's error code.
struct DriverFunction {
  const void* kernel;
  int device;
  CUfunction function;
};

PFN_cuLaunchKernelEx_v11060 driver_launch_entry() {
  static const PFN_cuLaunchKernelEx_v11060 entry = [] {
    void* found = nullptr;
    cudaDriverEntryPointQueryResult result{};
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &found, 12000, cudaEnableDefault, &result) != cudaSuccess ||
        result != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();  // not an error of any launch
      found = nullptr;
    }
    return reinterpret_cast<PFN_cuLaunchKernelEx_v11060>(found);
  }();
  return entry;
}

KernelStatus driver_launch(PFN_cuLaunchKernelEx_v11060 launch_ex, const void* kernel, int64_t grid,
                           int32_t cta_threads, void** params, bool programmatic_launch, cudaStream_t stream,
                           const char* call, int line) {
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return failure(status, "cudaGetDevice", line);
  // The kernels a process launches, per device: a few dozen at most.
  static thread_local std::vector<DriverFunction> functions;
  CUfunction function = nullptr;
  for (const DriverFunction& f : functions) {
    if (f.kernel == kernel && f.device == device) function = f.function;
  }
  if (function == nullptr) {
    cudaFunction_t found = nullptr;
    status = cudaGetFuncBySymbol(&found, kernel);
    if (status != cudaSuccess) return failure(status, "cudaGetFuncBySymbol", line);
    function = reinterpret_cast<CUfunction>(found);
    functions.push_back(DriverFunction{kernel, device, function});
  }
  CUlaunchAttribute programmatic{};
  programmatic.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  programmatic.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig launch{};
  launch.gridDimX = static_cast<unsigned>(grid);
  launch.gridDimY = launch.gridDimZ = 1;
  launch.blockDimX = static_cast<unsigned>(cta_threads);
  launch.blockDimY = launch.blockDimZ = 1;
  launch.hStream = stream;
  launch.attrs = programmatic_launch ? &programmatic : nullptr;
  launch.numAttrs = programmatic_launch ? 1 : 0;
  const CUresult result = launch_ex(&launch, function, params, nullptr);
  // (CUresult and cudaError_t share the codes of the launch errors: invalid value, out of resources...)
  return result == CUDA_SUCCESS ? KernelStatus{} : failure(static_cast<cudaError_t>(result), call, line);
}

// Eager padding rows [T, T_cap) (SPEC §7): -1 (every byte 0xff) and length 0.
KernelStatus fill_padding_rows(const MixedSparseIndicesArgs& args, cudaStream_t stream) {
  const int32_t padding = args.num_rows - args.num_tokens;
  const size_t pitch = static_cast<size_t>(args.output_stride) * sizeof(int32_t);
  cudaError_t status = cudaMemset2DAsync(args.sparse_indices + static_cast<int64_t>(args.num_tokens) * args.output_stride +
                                             (args.first_column - args.output_shift),
                                         pitch, 0xff, static_cast<size_t>(args.end_column - args.first_column) * sizeof(int32_t),
                                         static_cast<size_t>(padding), stream);
  if (status != cudaSuccess) return failure(status, "cudaMemset2DAsync(padding rows)", __LINE__);
  if (args.sparse_lens == nullptr) return KernelStatus{};
  status = cudaMemsetAsync(args.sparse_lens + args.num_tokens, 0, static_cast<size_t>(padding) * sizeof(int32_t), stream);
  if (status != cudaSuccess) return failure(status, "cudaMemsetAsync(padding lens)", __LINE__);
  return KernelStatus{};
}

}  // namespace

KernelStatus launch_kernel_runtime(const void* kernel, int64_t grid, int32_t cta_threads, void** params,
                                   bool programmatic_launch, cudaStream_t stream, const char* call, int line) {
  cudaLaunchAttribute programmatic{};
  programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t launch{};
  launch.gridDim = dim3(static_cast<unsigned>(grid));
  launch.blockDim = dim3(static_cast<unsigned>(cta_threads));
  launch.stream = stream;
  launch.attrs = programmatic_launch ? &programmatic : nullptr;
  launch.numAttrs = programmatic_launch ? 1 : 0;
  cudaError_t status = cudaLaunchKernelExC(&launch, kernel, params);
  const cudaError_t last = cudaGetLastError();  // also clears a launch error's state
  if (status == cudaSuccess) status = last;
  return status == cudaSuccess ? KernelStatus{} : failure(status, call, line);
}

KernelStatus launch_build_kernel(const void* kernel, int64_t grid, int32_t cta_threads, void** params,
                                 bool programmatic_launch, cudaStream_t stream, const char* call, int line) {
  const PFN_cuLaunchKernelEx_v11060 launch_ex = driver_launch_entry();
  return launch_ex != nullptr
             ? driver_launch(launch_ex, kernel, grid, cta_threads, params, programmatic_launch, stream, call, line)
             : launch_kernel_runtime(kernel, grid, cta_threads, params, programmatic_launch, stream, call, line);
}

KernelStatus launch_metadata_check(const MixedSparseIndicesArgs& args, MetadataStatus* status,
                                   const MixedSparseIndicesLaunchConfig& config, cudaStream_t stream) {
  void* params[] = {const_cast<MixedSparseIndicesArgs*>(&args), &status};  // copied at launch
  // Always through the runtime: a step graph tells its check nodes by this kernel's host-side
  // address (metadata_check_kernel_entry), which a node launched from a CUfunction may not carry.
  return launch_kernel_runtime(reinterpret_cast<const void*>(&metadata_check_kernel), 1, kCheckThreads, params,
                               config.programmatic_launch, stream, "cudaLaunchKernelExC(metadata_check_kernel)",
                               __LINE__);
}

const void* metadata_check_kernel_entry() { return reinterpret_cast<const void*>(&metadata_check_kernel); }

DecodeForm decode_form(const MixedSparseIndicesArgs& args) {
  if (args.decode_width == 0) return DecodeForm::kWindowOnly;
  return args.decode_local ? DecodeForm::kLocal : DecodeForm::kGlobal;
}

// The decode forms, run-time to compile-time: kernel_of(form as a std::integral_constant).
template <class KernelOf>
const void* for_decode_form(DecodeForm form, KernelOf kernel_of) {
  using Form = DecodeForm;
  switch (form) {
    case Form::kWindowOnly: return kernel_of(std::integral_constant<Form, Form::kWindowOnly>{});
    case Form::kGlobal: return kernel_of(std::integral_constant<Form, Form::kGlobal>{});
    case Form::kLocal: break;
  }
  return kernel_of(std::integral_constant<Form, Form::kLocal>{});
}

template <bool kParts>
const void* decode_chunk_kernel_for(DecodeForm form) {
  return for_decode_form(form, [](auto f) {
    return reinterpret_cast<const void*>(&decode_chunk_kernel<decltype(f)::value, kParts>);
  });
}

template <bool kParts>
const void* checked_decode_chunk_kernel_for(DecodeForm form) {
  return for_decode_form(form, [](auto f) {
    return reinterpret_cast<const void*>(&checked_decode_chunk_kernel<decltype(f)::value, kParts>);
  });
}

KernelStatus launch_mixed_sparse_indices(const MixedSparseIndicesArgs& args,
                                         const MixedSparseIndicesLaunchConfig& config, cudaStream_t stream,
                                         MetadataStatus* status) {
  const bool checked = args.run_time_sizes != nullptr;
  if (status != nullptr && !checked) {
    return KernelStatus{static_cast<int>(cudaErrorInvalidValue), "launch_mixed_sparse_indices: a status needs run_time_sizes",
                        __FILE__, __LINE__};
  }
  if (!checked && args.num_rows > args.num_tokens) {
    const KernelStatus padded = fill_padding_rows(args, stream);
    if (!padded.ok()) return padded;
  }
  const int32_t rows_launched = checked ? args.num_rows : args.num_tokens;
  const LaunchShape shape = rows_launched > 0 ? mixed_sparse_indices_launch_shape(args, config) : LaunchShape{};
  // The decode-chunk kernel checks the step's metadata in one extra CTA; the group kernels
  // leave it to a CTA of its own, launched first.
  const bool status_in_build = status != nullptr && shape.decode_chunks;
  if (status != nullptr && !status_in_build) {
    const KernelStatus checked_status = launch_metadata_check(args, status, config, stream);
    if (!checked_status.ok()) return checked_status;
  }
  if (rows_launched <= 0) return KernelStatus{};
  MetadataStatus* build_status = status_in_build ? status : nullptr;
  void* params[] = {const_cast<MixedSparseIndicesArgs*>(&args), &build_status};  // copied at launch
  if (shape.decode_chunks && checked) {
    return launch_build_kernel(whole_row_build(args) ? checked_decode_chunk_kernel_for<false>(decode_form(args))
                                                     : checked_decode_chunk_kernel_for<true>(decode_form(args)),
                               grid_ctas(shape, rows_launched) + (status_in_build ? 1 : 0), shape.group_threads, params,
                               config.programmatic_launch, stream,
                               "cudaLaunchKernelExC(checked_decode_chunk_kernel) / cudaGetLastError", __LINE__);
  }
  if (shape.decode_chunks) {
    DecodeChunkArgs decode_args = DecodeChunkArgs::of(args);
    void* decode_params[] = {&decode_args};  // copied at launch
    const void* kernel = whole_row_build(args) ? decode_chunk_kernel_for<false>(decode_form(args))
                                               : decode_chunk_kernel_for<true>(decode_form(args));
    return launch_build_kernel(kernel, grid_ctas(shape, rows_launched), shape.group_threads, decode_params,
                               config.programmatic_launch, stream,
                               "cudaLaunchKernelExC(decode_chunk_kernel) / cudaGetLastError", __LINE__);
  }
  RowKinds rows = row_kinds(args);
  if (!checked && rows == RowKinds::kPrefill && args.power_of_two_blocks && args.vector_path) {  // the common prefill build
    PrefillRowsArgs prefill_args = PrefillRowsArgs::of(args);
    void* prefill_params[] = {&prefill_args};  // copied at launch
    const bool whole = whole_row_build(args);
    const void* kernel = config.gathered_lookups && prefill_gathers_lookups(args.ratio, shape.group_threads, whole)
                             ? gathered_prefill_rows_kernel_for(shape.group_threads)
                         : whole ? prefill_rows_kernel_for<false>(shape.group_threads)
                                 : prefill_rows_kernel_for<true>(shape.group_threads);
    return launch_build_kernel(kernel, grid_ctas(shape, rows_launched), kCta, prefill_params,
                               config.programmatic_launch, stream,
                               "cudaLaunchKernelExC(prefill_rows_kernel) / cudaGetLastError", __LINE__);
  }
  // Checked, the capacities say which rows a step can have: D_cap = 0 (a prefill graph) builds
  // with the prefill-only kernel (on the split graph's compressed segments the kernel of both
  // kinds took ~2 us longer a build: bench/results/2026-12-04-h200-checks-off-chain/).
  if (checked) {
    rows = args.prefill_rows == 0         ? RowKinds::kDecode
           : args.num_decode_tokens == 0 ? RowKinds::kPrefill
                                         : RowKinds::kBoth;
  }
  const KernelFunction kernel = checked ? select_checked_kernel(shape, args.power_of_two_blocks, args.vector_path, rows,
                                                                !whole_row_build(args))
                                        : select_kernel(shape, args.power_of_two_blocks, args.vector_path, rows,
                                                        !whole_row_build(args));
  return launch_build_kernel(reinterpret_cast<const void*>(kernel), grid_ctas(shape, rows_launched), kCta, params,
                             config.programmatic_launch, stream,
                             "cudaLaunchKernelExC(mixed_sparse_indices kernel) / cudaGetLastError", __LINE__);
}

// One launch when the builds can share the multi-build kernel (can_build_together), else a
// launch each.
KernelStatus launch_mixed_sparse_indices_together(const MixedSparseIndicesArgs* builds, int count,
                                                  const MixedSparseIndicesLaunchConfig& config, cudaStream_t stream) {
  if (!can_build_together(builds, count)) {
    for (int b = 0; b < count; ++b) {
      const KernelStatus status = launch_mixed_sparse_indices(builds[b], config, stream);
      if (!status.ok()) return status;
    }
    return KernelStatus{};
  }
  const LaunchShape shape = multi_build_shape(builds, count, config.sm_count, config.forced);
  MultiBuildArgs m = multi_build_args(builds, count, shape);
  if (m.first_cta[count] == 0) return KernelStatus{};
  MultiKernelFunction kernel = nullptr;
  switch (row_kinds(builds[0])) {
    case RowKinds::kDecode: kernel = multi_kernel_for_group<RowKinds::kDecode>(shape.group_threads); break;
    case RowKinds::kPrefill: kernel = multi_kernel_for_group<RowKinds::kPrefill>(shape.group_threads); break;
    case RowKinds::kBoth: kernel = multi_kernel_for_group<RowKinds::kBoth>(shape.group_threads); break;
  }
  void* params[] = {&m};  // copied at launch
  return launch_build_kernel(reinterpret_cast<const void*>(kernel), m.first_cta[count], kCta, params,
                             config.programmatic_launch, stream,
                             "cudaLaunchKernelExC(multi_build_kernel) / cudaGetLastError", __LINE__);
}

}  // namespace dsv4::kernels
