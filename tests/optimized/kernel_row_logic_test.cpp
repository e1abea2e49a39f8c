// The kernels/ building blocks on the host: the fast divider, and the row logic executed the
// way a GPU group executes it (columns split round-robin over 32 or 256 ranks, picks summed
// over the group), on the vector and the scalar paths, against the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "kernels/fast_divider.h"
#include "kernels/mixed_sparse_indices_policy.h"
#include "kernels/mixed_sparse_indices_row.h"
#include "optimized/host_memory.h"
#include "optimized/kernel_args.h"
#include "tests/optimized/optimized_test_support.h"

namespace dsv4::opt {
namespace {

TEST(FastDivider, ExactForEveryDividendBelow2To31) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 2100; ++d) divisors.push_back(d);
  for (uint32_t k = 0; k <= 30; ++k) {
    divisors.push_back(1u << k);
    divisors.push_back((1u << k) + 1);
    if (k > 1) divisors.push_back((1u << k) - 1);
  }
  divisors.push_back(0x7fffffffu);
  for (int i = 0; i < 2000; ++i) divisors.push_back(static_cast<uint32_t>(rng() % 0x7fffffffu) + 1);
  for (uint32_t d : divisors) {
    const FastDivider divider = FastDivider::make(static_cast<int32_t>(d));
    std::vector<uint32_t> dividends = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, 0x7fffffffu, 0x7ffffffeu,
                                       0x7fffffffu / d * d, 0x7fffffffu / d * d - 1};
    for (int i = 0; i < 200; ++i) dividends.push_back(static_cast<uint32_t>(rng() % 0x80000000u));
    for (int i = 0; i < 64; ++i) dividends.push_back(static_cast<uint32_t>(rng() % 4096));
    for (uint32_t n : dividends) {
      if (n > 0x7fffffffu) continue;
      ASSERT_EQ(divider.divide(n), n / d) << n << " / " << d;
    }
  }
}

TEST(FastDivider, ExhaustiveForSmallBlockSizes) {
  for (int32_t d : {1, 2, 3, 5, 7, 64, 100}) {
    const FastDivider divider = FastDivider::make(d);
    for (uint32_t n = 0; n < (1u << 22); n += 1) {
      ASSERT_EQ(divider.divide(n), n / static_cast<uint32_t>(d)) << n << " / " << d;
    }
  }
}

// slot() against plain 64-bit arithmetic where the fast path ends: physical block ids around
// the largest one whose every slot fits int32, negative ids, and blocks past the width.
TEST(BlockTableView, SlotMatchesWideArithmeticAtTheInt32Edge) {
  for (int32_t B : {1, 2, 3, 64, 100, 256}) {
    const int64_t max_safe = (int64_t{INT32_MAX} - (B - 1)) / B;
    // INT32_MAX / B + 1 in 64 bits: with B = 1 it is not an int32 (it was signed overflow).
    const auto past_max_block = static_cast<int32_t>(std::min<int64_t>(int64_t{INT32_MAX} / B + 1, INT32_MAX));
    std::vector<int32_t> ids = {0, 1, -1, INT32_MIN, INT32_MAX, INT32_MAX / B, past_max_block};
    for (int64_t d = -2; d <= 3; ++d) ids.push_back(static_cast<int32_t>(max_safe + d));
    const BlockTableView view = BlockTableView::make(ids.data(), 1, static_cast<int32_t>(ids.size()), B);
    for (int32_t block = 0; block <= static_cast<int32_t>(ids.size()); ++block) {
      for (int32_t offset : {0, 1, B / 2, B - 1}) {
        if (offset >= B) continue;
        const int32_t i = block * B + offset;
        int32_t errors = 0;
        const int32_t got = view.slot(0, i, &errors);
        int64_t want = -1;
        if (block < static_cast<int32_t>(ids.size()) && ids[static_cast<size_t>(block)] >= 0) {
          want = int64_t{ids[static_cast<size_t>(block)]} * B + offset;
          if (want > INT32_MAX) want = -1;
        }
        ASSERT_EQ(got, want) << "B " << B << " block " << block << " offset " << offset;
        ASSERT_EQ(errors, want < 0 ? 1 : 0) << "B " << B << " block " << block << " offset " << offset;
      }
    }
  }
}

TEST(RowMappingPolicy, WarpsForNarrowRowsCtasForWideRowsAndSmallSteps) {
  using P = MixedSparseIndicesPolicy;
  const int32_t sms = 132;
  // 8192 SWA-only rows (128 columns) or C128A rows at short context (128 + 128): half a warp
  // per row, so that every row's dependent loads are in flight at once.
  EXPECT_EQ(choose_row_mapping(8192, 128 / 4, sms), RowMapping::kHalfWarpPerRow);
  EXPECT_EQ(choose_row_mapping(8192, P::kMaxHalfWarpRowChunks, sms), RowMapping::kHalfWarpPerRow);
  EXPECT_EQ(choose_row_mapping(8192, P::kMaxHalfWarpRowChunks + 1, sms), RowMapping::kWarpPerRow);
  EXPECT_EQ(grid_ctas(RowMapping::kHalfWarpPerRow, 8192, sms), 512);
  // 8192 prefill rows of 128 + 1024 columns: a warp per row.
  EXPECT_EQ(choose_row_mapping(8192, (128 + 1024) / 4, sms), RowMapping::kWarpPerRow);
  // C128A at 1M context: 128 + 8192 columns -> a CTA per row.
  EXPECT_EQ(choose_row_mapping(8192, (128 + 8192) / 4, sms), RowMapping::kCtaPerRow);
  EXPECT_EQ(choose_row_mapping(8192, P::kMaxWarpRowChunks, sms), RowMapping::kWarpPerRow);
  EXPECT_EQ(choose_row_mapping(8192, P::kMaxWarpRowChunks + 1, sms), RowMapping::kCtaPerRow);
  // A 64-token decode step: a CTA per row spreads it over 64 SMs.
  EXPECT_EQ(choose_row_mapping(64, (128 + 512) / 4, sms), RowMapping::kCtaPerRow);
  EXPECT_EQ(choose_row_mapping(sms * 2, 160, sms), RowMapping::kCtaPerRow);
  EXPECT_EQ(choose_row_mapping(sms * 2 + 1, 160, sms), RowMapping::kWarpPerRow);
  // Grid: one CTA per 8 rows (warps) or per row, capped at 8 CTAs per SM (grid-stride beyond).
  EXPECT_EQ(grid_ctas(RowMapping::kWarpPerRow, 8192, sms), 1024);
  EXPECT_EQ(grid_ctas(RowMapping::kWarpPerRow, 8193, sms), 1025);
  EXPECT_EQ(grid_ctas(RowMapping::kWarpPerRow, 100000, sms), sms * P::kMaxCtasPerSm);
  EXPECT_EQ(grid_ctas(RowMapping::kCtaPerRow, 64, sms), 64);
  EXPECT_EQ(grid_ctas(RowMapping::kCtaPerRow, 8192, sms), sms * P::kMaxCtasPerSm);
  EXPECT_EQ(grid_ctas(RowMapping::kWarpPerRow, 1, sms), 1);
  // One wave: never more CTAs per SM than are resident (40 registers x 256 threads -> 6).
  EXPECT_EQ(grid_ctas(RowMapping::kWarpPerRow, 100000, sms, 6), sms * 6);
  EXPECT_EQ(grid_ctas(RowMapping::kCtaPerRow, 100000, sms, 12), sms * P::kMaxCtasPerSm);
  EXPECT_EQ(grid_ctas(RowMapping::kCtaPerRow, 100000, sms, 0), sms);
}

enum class Path { kAsChosen, kScalar, kVectorStoresScalarLoads };

// Every row as a group of `group_threads` ranks would build it on the GPU (with the kernels'
// compressed batch), or the host backend (a group of one, batch 1).
template <bool kLocal, bool kVec4>
int64_t build_as_groups(const MixedSparseIndicesArgs& a, int32_t group_threads) {
  int64_t errors = 0;
  for (int32_t t = 0; t < a.num_tokens; ++t) {
    const RowPlan row = plan_row(a, t);
    int32_t picks = 0;
    int32_t row_errors = 0;
    for (int32_t rank = 0; rank < group_threads; ++rank) {
      picks += group_threads == 1
                   ? build_row_share<kLocal, kVec4, 1>(a, t, rank, group_threads, &row_errors).picks
                   : build_row_share<kLocal, kVec4, MixedSparseIndicesPolicy::kCompressedBatch>(
                         a, t, rank, group_threads, &row_errors)
                         .picks;
    }
    a.sparse_lens[t] = row_length(a, row, picks);
    errors += row_errors;
  }
  return errors;
}

::testing::AssertionResult groups_match_reference(const ref::BuilderInputs& in, int32_t group_threads,
                                                  Path path, testing::StagingOptions options) {
  const ref::BuilderOutput expected = ref::build_mixed_sparse_indices(in);
  testing::StagedRequest staged(Backend::kHost, in, options);
  const int32_t T = staged.request().num_tokens;
  const int32_t width = static_cast<int32_t>(expected.sparse_indices.cols());
  const size_t count = static_cast<size_t>(T) * static_cast<size_t>(width);
  int32_t* indices = static_cast<int32_t*>(allocate_host((count + 1) * sizeof(int32_t)));
  int32_t* lens = static_cast<int32_t*>(allocate_host((static_cast<size_t>(T) + 1) * sizeof(int32_t)));
  for (size_t i = 0; i < count; ++i) indices[i] = 0x5a5a5a5a;
  for (int32_t t = 0; t < T; ++t) lens[t] = 0x5a5a5a5a;
  MixedSparseIndicesArgs a = make_mixed_sparse_indices_args(staged.request(), indices, lens, nullptr);
  if (a.row_width != width) return ::testing::AssertionFailure() << "row_width " << a.row_width;
  if (a.vector_stores != (in.window % 4 == 0)) {
    return ::testing::AssertionFailure() << "vector_stores " << a.vector_stores << " for W = " << in.window;
  }
  if (path == Path::kScalar) a.vector_stores = false;
  if (path != Path::kAsChosen) {
    a.decode_swa_vector_loads = a.decode_compressed_vector_loads = a.prefill_topk_vector_loads = false;
  }
  int64_t errors = 0;
  if (a.decode_local) {
    errors = a.vector_stores ? build_as_groups<true, true>(a, group_threads)
                             : build_as_groups<true, false>(a, group_threads);
  } else {
    errors = a.vector_stores ? build_as_groups<false, true>(a, group_threads)
                             : build_as_groups<false, false>(a, group_threads);
  }
  harness::HostIndices actual;
  actual.sparse_indices = Eigen::Map<const ref::IndexMatrix>(indices, T, width);
  actual.sparse_lens = Eigen::Map<const ref::IndexVector>(lens, T);
  release_host(indices);
  release_host(lens);
  return testing::same_output(expected, actual, errors, static_cast<int32_t>(in.decode_swa_indices.rows()));
}

TEST(RowLogicAsGpuGroups, RandomBuildsOnEveryPathAndGroupSize) {
  const testing::StagingOptions stagings[] = {{0, 0}, {1, 0}, {4, 0}, {0, 1}};
  for (uint64_t seed = 0; seed < 150; ++seed) {
    std::mt19937_64 rng(50000 + seed);
    const ref::BuilderInputs in = testing::random_builder_inputs(rng);
    for (int32_t group : {1, 16, 32, 256}) {
      for (Path path : {Path::kAsChosen, Path::kScalar, Path::kVectorStoresScalarLoads}) {
        const testing::StagingOptions staging = stagings[seed % 4];
        ASSERT_TRUE(groups_match_reference(in, group, path, staging))
            << "seed " << 50000 + seed << " group " << group << " path " << static_cast<int>(path)
            << ": " << testing::describe(in);
      }
    }
  }
}

// Wide rows (a CTA's 256 ranks each own several chunks) and the tiny batch.
TEST(RowLogicAsGpuGroups, WideRowsAndTinyBatch) {
  testing::RandomShape wide;
  wide.max_topk = 1500;
  wide.max_context = 3000;
  wide.max_requests = 3;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    std::mt19937_64 rng(60000 + seed);
    const ref::BuilderInputs in = testing::random_builder_inputs(rng, wide);
    for (int32_t group : {16, 32, 256}) {
      ASSERT_TRUE(groups_match_reference(in, group, Path::kAsChosen, {})) << testing::describe(in);
    }
  }
  for (const ref::BuilderInputs& in : {testing::tiny_swa_only(), testing::tiny_c128a(), testing::tiny_c4a()}) {
    for (int32_t group : {1, 16, 32, 256}) EXPECT_TRUE(groups_match_reference(in, group, Path::kAsChosen, {}));
  }
}

}  // namespace
}  // namespace dsv4::opt
