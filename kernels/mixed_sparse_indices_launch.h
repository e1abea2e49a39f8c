// Launcher of the CUDA mixed-sparse-indices kernels (kernels/mixed_sparse_indices.cu).
// Asynchronous on `stream`; no allocation, no synchronization.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_status.h"
#include "kernels/mixed_sparse_indices_args.h"
#include "kernels/mixed_sparse_indices_policy.h"

namespace dsv4::kernels {

// What the launch shape depends on, queried once per device (never per launch).
struct MixedSparseIndicesLaunchConfig {
  int32_t sm_count = 0;
  // Tests and the tuning benchmark: use this shape's group_threads instead of the policy's (0 =
  // the policy; chunks is always the one compiled count). The scalar path keeps its own shape.
  LaunchShape forced{};
  // Programmatic dependent launch (sm_90+): the launch may begin while the kernel before it
  // on the stream finishes; the kernel waits for that grid's completion (and its memory)
  // before its first global read, so results are the same. Overlaps a build's launch and
  // ramp-up with its predecessor's tail (bench: step_bench --programmatic_launch).
  bool programmatic_launch = false;
  // The gathered-lookups kernel for the builds prefill_gathers_lookups picks (false: the
  // default kernels for every build, the other half of a same-binary A/B: kernel_bench
  // --no_gathered_lookups).
  bool gathered_lookups = true;
};

KernelStatus prepare_mixed_sparse_indices_launch(int device, MixedSparseIndicesLaunchConfig* config);

// The shape a launch of `args` takes under `config`.
LaunchShape mixed_sparse_indices_launch_shape(const MixedSparseIndicesArgs& args,
                                              const MixedSparseIndicesLaunchConfig& config);

// Builds every row of args (T may be 0: nothing is launched). Content errors are added to
// *args.content_errors (device memory). Checks the launch (cudaGetLastError) and returns its
// status. Rows [T, T_cap) are padding: with args.run_time_sizes the kernel writes them (T is
// known there only), else two memsets before the kernel do. `status` (only with
// run_time_sizes; device memory): SPEC §7's status word of the step's metadata is overwritten
// as launch_metadata_check does, by the build's own launch where its kernel can (decode-chunk
// rows: one more CTA), else by a check launched before it.
KernelStatus launch_mixed_sparse_indices(const MixedSparseIndicesArgs& args,
                                         const MixedSparseIndicesLaunchConfig& config,
                                         cudaStream_t stream, MetadataStatus* status = nullptr);

// SPEC §8 one launch: builds builds[0, count) (count <= kMaxBuildsPerLaunch) of one step in one
// kernel launch when they can share it (kernels/multi_build.h can_build_together: every
// production step's cacheable builds), else one launch each.
KernelStatus launch_mixed_sparse_indices_together(const MixedSparseIndicesArgs* builds, int count,
                                                  const MixedSparseIndicesLaunchConfig& config, cudaStream_t stream);

// How every build kernel is launched: the driver's cuLaunchKernelEx with the kernel's CUfunction
// looked up once per device and thread, or the runtime's cudaLaunchKernelExC where the driver
// has no cuLaunchKernelEx. `kernel` is a __global__ function's host address, `params` its
// arguments as cudaLaunchKernel takes them; a failure is reported as `call` at `line`. Exported
// so that the benchmarks' launch floor times the builds' own launch path.
KernelStatus launch_build_kernel(const void* kernel, int64_t grid, int32_t cta_threads, void** params,
                                 bool programmatic_launch, cudaStream_t stream, const char* call, int line);

// The runtime's launch of the same arguments (cudaLaunchKernelExC, then cudaGetLastError, which
// also clears a launch error's state): launch_build_kernel's fallback, the metadata check's
// launch (its graph nodes must carry the kernel's host address), and the benchmarks' other
// kernels (floors), so that those are launched as the builder's runtime launches are.
KernelStatus launch_kernel_runtime(const void* kernel, int64_t grid, int32_t cta_threads, void** params,
                                   bool programmatic_launch, cudaStream_t stream, const char* call, int line);

// SPEC §7: checks the step's metadata under args.run_time_sizes (non-null) in one CTA and
// overwrites *status (device memory) with the first failure and the count. No host sync.
KernelStatus launch_metadata_check(const MixedSparseIndicesArgs& args, MetadataStatus* status,
                                   const MixedSparseIndicesLaunchConfig& config, cudaStream_t stream);
// The host-side address of launch_metadata_check's kernel: how a recorded graph's check nodes
// are told from its builds (optimized/graph_layout.h launches_kernel).
const void* metadata_check_kernel_entry();

}  // namespace dsv4::kernels
