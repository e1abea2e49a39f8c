// CUDA kernels of build_mixed_sparse_indices (SPEC §3) over the shared row logic
// (mixed_sparse_indices_row.h), and their launcher.
#include <cuda_runtime.h>

#include "kernels/mixed_sparse_indices_launch.h"
#include "kernels/mixed_sparse_indices_policy.h"
#include "kernels/mixed_sparse_indices_row.h"

namespace dsv4::opt {
namespace {

using Policy = MixedSparseIndicesPolicy;

// Sum over aligned groups of kLanes lanes (16 or 32) of the lanes in `mask`, which must be
// exactly the calling groups' lanes (a half warp may run a row its other half does not).
template <int kLanes = Policy::kWarpThreads>
__device__ __forceinline__ int32_t warp_sum(int32_t value, unsigned mask = 0xffffffffu) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(mask, value, offset);
  }
  return value;
}

// Sum of `value` over the group that owns a row; every thread of the group must call it.
// A half-warp or warp group gets the sum in every lane; a CTA group gets it in thread 0.
template <int kGroupThreads>
__device__ __forceinline__ int32_t group_sum(int32_t value) {
  if constexpr (kGroupThreads == Policy::kHalfWarpThreads) {
    const unsigned half = (threadIdx.x / Policy::kHalfWarpThreads) % 2;
    return warp_sum<Policy::kHalfWarpThreads>(value, 0xffffu << (Policy::kHalfWarpThreads * half));
  } else if constexpr (kGroupThreads == Policy::kWarpThreads) {
    return warp_sum(value);
  } else {
    value = warp_sum(value);
    static_assert(kGroupThreads == Policy::kCtaThreads, "groups are a warp or a CTA");
    __shared__ int32_t warp_partials[Policy::kCtaThreads / Policy::kWarpThreads];
    const int warp = static_cast<int>(threadIdx.x) / Policy::kWarpThreads;
    if (threadIdx.x % Policy::kWarpThreads == 0) warp_partials[warp] = value;
    __syncthreads();
    int32_t total = 0;
    if (threadIdx.x == 0) {
      for (int w = 0; w < Policy::kCtaThreads / Policy::kWarpThreads; ++w) total += warp_partials[w];
    }
    __syncthreads();  // the partials are free for the next row
    return total;
  }
}

// Builds rows of sparse_indices / sparse_lens in a grid-stride loop over tokens.
// One CTA = kCtaThreads threads split into groups of kGroupThreads; a group owns one row at a
// time: kGroupThreads = 16 -> half a warp per row, 16 rows per CTA in flight (narrow rows);
// 32 -> one warp per row, 8 rows per CTA; kCtaThreads -> the whole CTA on one row (wide C128A
// rows, small steps).
// Within a row, thread `rank` of the group writes 16-byte chunks rank, rank + kGroupThreads, ...
// (kVec4: consecutive lanes store consecutive 16 B, so a warp writes 512 contiguous bytes per
// iteration) or single columns (W % 4 != 0). The window part comes first, then the compressed
// part; each chunk is entirely in one of them because W % 4 == 0 on the vector path.
// Decode and prefill rows take separate, branch-free instantiations of the row code (the row
// kind is uniform across the group); kDecodeLocal selects translated (C4A) or copied (C128A)
// decode compressed columns. Rank 0 writes sparse_lens[t]; a local-form decode row first sums
// its picks over the group. Content errors are counted per thread, warp-reduced once after the
// loop and added to the device counter with one atomicAdd per warp that saw any.
template <int kGroupThreads, bool kDecodeLocal, bool kVec4>
__global__ void __launch_bounds__(Policy::kCtaThreads)
    mixed_sparse_indices_kernel(const MixedSparseIndicesArgs args) {
  constexpr int32_t kGroupsPerCta = Policy::kCtaThreads / kGroupThreads;
  const int32_t rank = static_cast<int32_t>(threadIdx.x) % kGroupThreads;
  const int32_t group = static_cast<int32_t>(threadIdx.x) / kGroupThreads;
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * kGroupsPerCta;
  int32_t errors = 0;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kGroupsPerCta + group; t < args.num_tokens;
       t += row_stride) {
    const RowShare share = build_row_share<kDecodeLocal, kVec4, Policy::kCompressedBatch>(
        args, static_cast<int32_t>(t), rank, kGroupThreads, &errors);
    const RowPlan& row = share.row;
    int32_t picks = share.picks;
    if constexpr (kDecodeLocal) {
      if (row.decode) picks = group_sum<kGroupThreads>(picks);
    }
    if (rank == 0) args.sparse_lens[t] = row_length(args, row, picks);
  }
  errors = warp_sum(errors);
  if (threadIdx.x % Policy::kWarpThreads == 0 && errors != 0) {
    atomicAdd(args.content_errors, static_cast<unsigned long long>(errors));
  }
}

// The kernel variant for a row mapping and the args' decode form and vector path.
using KernelFunction = void (*)(MixedSparseIndicesArgs);
template <int kGroupThreads>
KernelFunction select_variant(bool decode_local, bool vec4) {
  if (decode_local) {
    return vec4 ? &mixed_sparse_indices_kernel<kGroupThreads, true, true>
                : &mixed_sparse_indices_kernel<kGroupThreads, true, false>;
  }
  return vec4 ? &mixed_sparse_indices_kernel<kGroupThreads, false, true>
              : &mixed_sparse_indices_kernel<kGroupThreads, false, false>;
}
KernelFunction select_kernel(RowMapping mapping, bool decode_local, bool vec4) {
  switch (mapping) {
    case RowMapping::kHalfWarpPerRow:
      return select_variant<Policy::kHalfWarpThreads>(decode_local, vec4);
    case RowMapping::kWarpPerRow:
      return select_variant<Policy::kWarpThreads>(decode_local, vec4);
    case RowMapping::kCtaPerRow:
      break;
  }
  return select_variant<Policy::kCtaThreads>(decode_local, vec4);
}

KernelStatus failure(cudaError_t status, const char* call, int line) {
  return KernelStatus{static_cast<int>(status), call, __FILE__, line};
}

}  // namespace

KernelStatus prepare_mixed_sparse_indices_launch(int device, MixedSparseIndicesLaunchConfig* config) {
  int sm_count = 0;
  cudaError_t status = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  if (status != cudaSuccess) return failure(status, "cudaDeviceGetAttribute(MultiProcessorCount)", __LINE__);
  config->sm_count = sm_count;
  for (int mapping = 0; mapping < kRowMappings; ++mapping) {
    for (int local = 0; local < 2; ++local) {
      for (int vec4 = 0; vec4 < 2; ++vec4) {
        int resident = 0;
        status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &resident, select_kernel(static_cast<RowMapping>(mapping), local != 0, vec4 != 0),
            Policy::kCtaThreads, 0);
        if (status != cudaSuccess) {
          return failure(status, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", __LINE__);
        }
        config->ctas_per_sm[mapping][local][vec4] = resident;
      }
    }
  }
  return KernelStatus{};
}

KernelStatus launch_mixed_sparse_indices(const MixedSparseIndicesArgs& args,
                                         const MixedSparseIndicesLaunchConfig& config,
                                         cudaStream_t stream) {
  if (args.num_tokens <= 0) return KernelStatus{};
  const int32_t row_chunks = args.vector_stores ? args.row_width / 4 : args.row_width;
  const RowMapping mapping = choose_row_mapping(args.num_tokens, row_chunks, config.sm_count);
  const int32_t grid = grid_ctas(
      mapping, args.num_tokens, config.sm_count,
      config.ctas_per_sm[static_cast<int>(mapping)][args.decode_local][args.vector_stores]);
  const KernelFunction kernel = select_kernel(mapping, args.decode_local, args.vector_stores);
  void* params[] = {const_cast<MixedSparseIndicesArgs*>(&args)};  // copied at launch
  cudaError_t status = cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(grid)),
                                        dim3(Policy::kCtaThreads), params, 0, stream);
  const cudaError_t last = cudaGetLastError();  // also clears a launch error's state
  if (status == cudaSuccess) status = last;
  if (status != cudaSuccess) {
    return failure(status, "cudaLaunchKernel(mixed_sparse_indices_kernel) / cudaGetLastError", __LINE__);
  }
  return KernelStatus{};
}

}  // namespace dsv4::opt
