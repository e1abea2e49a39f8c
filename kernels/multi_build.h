// SPEC §8 one launch: several builds of one step (its SWA-only and C128A outputs, its shared SWA
// segment) in one grid of the group kernel, build b on its own range of CTAs, every build's
// rows mapped to groups as a launch of its own maps them (mixed_sparse_indices_row.h). Host
// code: whether builds can share a launch and how its grid is cut; both are tested on the host.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_policy.h"
#include "kernels/mixed_sparse_indices_row.h"

namespace dsv4::kernels {

// The builds one launch may hold (a step's SWA-only and C128A outputs, its SWA segment, one more).
inline constexpr int kMaxBuildsPerLaunch = 4;

// Build b owns the CTAs [first_cta[b], first_cta[b + 1]); rows as in a launch of its own.
struct MultiBuildArgs {
  int32_t count;
  uint32_t first_cta[kMaxBuildsPerLaunch + 1];
  MixedSparseIndicesArgs builds[kMaxBuildsPerLaunch];
};
static_assert(sizeof(MultiBuildArgs) <= 4096, "a kernel's parameters must fit the classic 4 KiB limit");

// Which rows a build holds: the kernels compile decode-only and prefill-only variants.
DSV4_HD DSV4_INLINE RowKinds row_kinds(const MixedSparseIndicesArgs& a) {
  return a.num_decode_tokens == a.num_tokens ? RowKinds::kDecode
         : a.num_decode_tokens == 0          ? RowKinds::kPrefill
                                             : RowKinds::kBoth;
}

// Whether builds[0, count) can share the compiled multi-build kernel: 2..kMaxBuildsPerLaunch
// host-sized builds without padding rows, all on 16-byte rows with power-of-two blocks, all
// holding the same row kinds (every production step's SWA-only, C128A and segment builds).
inline bool can_build_together(const MixedSparseIndicesArgs* builds, int count) {
  if (count < 2 || count > kMaxBuildsPerLaunch) return false;
  for (int b = 0; b < count; ++b) {
    const MixedSparseIndicesArgs& a = builds[b];
    if (!a.vector_path || !a.power_of_two_blocks || a.run_time_sizes != nullptr || a.num_rows != a.num_tokens ||
        row_kinds(a) != row_kinds(builds[0])) {
      return false;
    }
  }
  return true;
}

// One launch shape for all: `forced` (tests, sweeps) or the policy's for all their rows and the
// widest row written.
inline LaunchShape multi_build_shape(const MixedSparseIndicesArgs* builds, int count, int32_t sm_count,
                                     const LaunchShape& forced) {
  int32_t rows = 0, widest_chunks = 0;
  for (int b = 0; b < count; ++b) {
    rows += builds[b].num_tokens;
    const int32_t chunks = (builds[b].end_column - builds[b].first_column) / 4;
    widest_chunks = chunks > widest_chunks ? chunks : widest_chunks;
  }
  LaunchShape shape = valid_group_threads(forced.group_threads) ? forced : choose_launch_shape(rows, widest_chunks, sm_count);
  shape.chunks = MixedSparseIndicesPolicy::kDefaultChunks;
  shape.decode_chunks = false;
  return shape;
}

// The builds and their CTA ranges under `shape`; first_cta[count] CTAs in all.
inline MultiBuildArgs multi_build_args(const MixedSparseIndicesArgs* builds, int count, const LaunchShape& shape) {
  MultiBuildArgs m{};
  m.count = count;
  for (int b = 0; b < count; ++b) {
    m.builds[b] = builds[b];
    m.first_cta[b + 1] = m.first_cta[b] + static_cast<uint32_t>(grid_ctas(shape, builds[b].num_tokens));
  }
  return m;
}

// The build that CTA `cta` (< first_cta[count]) works for.
DSV4_HD DSV4_INLINE int build_of_cta(const MultiBuildArgs& m, uint32_t cta) {
  int b = 0;
  while (b + 1 < m.count && cta >= m.first_cta[b + 1]) ++b;
  return b;
}

}  // namespace dsv4::kernels
