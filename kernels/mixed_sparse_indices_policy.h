// Tuning knobs of the mixed-sparse-indices kernels in one place (CUB-style policy), and the
// host-side choice of launch shape derived from them.
#pragma once
#include <cstdint>

namespace dsv4::opt {

struct MixedSparseIndicesPolicy {
  static constexpr int32_t kCtaThreads = 256;
  static constexpr int32_t kWarpThreads = 32;
  // Threads per row: a power of two from kMinGroupThreads to kCtaThreads (a whole CTA).
  static constexpr int32_t kMinGroupThreads = 8;
  // Chunks (16 bytes, or one column on the scalar path) a thread handles per pass: all their
  // loads, then all their lookups, then all their stores. The 16-byte power-of-two path is
  // compiled for each of kChunkChoices; the other paths for kDefaultChunks only.
  static constexpr int32_t kDefaultChunks = 4;
  static constexpr int32_t kChunkChoices[3] = {2, 4, 8};
  // Rows of a step with at most this many rows per SM get at least this many threads, so that
  // a small decode step spreads its rows over many SMs.
  static constexpr int32_t kSmallStepRowsPerSm = 2;
  static constexpr int32_t kSmallStepGroupThreads = 64;
};

// How a launch maps rows to threads: `group_threads` threads own one row, each handling up to
// `chunks` of its chunks per pass. Grid: one CTA per kCtaThreads / group_threads rows.
struct LaunchShape {
  int32_t group_threads = 0;
  int32_t chunks = 0;
  bool operator==(const LaunchShape& o) const {
    return group_threads == o.group_threads && chunks == o.chunks;
  }
};

constexpr bool valid_group_threads(int32_t g) {
  return g >= MixedSparseIndicesPolicy::kMinGroupThreads && g <= MixedSparseIndicesPolicy::kCtaThreads &&
         (g & (g - 1)) == 0;
}

// The smallest group whose one pass covers a row of row_chunks chunks (a whole CTA for wider
// rows, which then take several passes); small steps get wider groups (more CTAs).
constexpr LaunchShape choose_launch_shape(int32_t num_tokens, int32_t row_chunks, int32_t sm_count,
                                          int32_t chunks = MixedSparseIndicesPolicy::kDefaultChunks) {
  using P = MixedSparseIndicesPolicy;
  int32_t g = P::kMinGroupThreads;
  while (g < P::kCtaThreads && static_cast<int64_t>(g) * chunks < row_chunks) g *= 2;
  if (static_cast<int64_t>(num_tokens) <= static_cast<int64_t>(sm_count) * P::kSmallStepRowsPerSm &&
      g < P::kSmallStepGroupThreads) {
    g = P::kSmallStepGroupThreads;
  }
  return LaunchShape{g, chunks};
}

// CTAs for num_tokens >= 0 rows: one per kCtaThreads / group_threads rows, every row at once
// (no grid-stride loop: the hardware keeps as many CTAs resident as fit).
constexpr int64_t grid_ctas(const LaunchShape& shape, int32_t num_tokens) {
  const int64_t rows_per_cta = MixedSparseIndicesPolicy::kCtaThreads / shape.group_threads;
  return (static_cast<int64_t>(num_tokens) + rows_per_cta - 1) / rows_per_cta;
}

}  // namespace dsv4::opt
