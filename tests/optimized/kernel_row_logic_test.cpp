// The kernels/ building blocks on the host: the fast divider, and the row logic executed the
// way a GPU group executes it (columns split round-robin over 32 or 256 ranks, picks summed
// over the group), on the vector and the scalar paths, against the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "harness/generators.h"
#include "harness/hand_cases.h"
#include "harness/staged_request.h"
#include "harness/step_factory.h"
#include "kernels/decode_chunk_args.h"
#include "kernels/fast_divider.h"
#include "kernels/prefill_rows_args.h"
#include "kernels/mixed_sparse_indices_policy.h"
#include "kernels/mixed_sparse_indices_row.h"
#include "kernels/multi_build.h"
#include "optimized/host_memory.h"
#include "optimized/kernel_args.h"
#include "reference/model_schedule.h"
#include "reference/sharing_modes.h"
#include "support/expectations.h"

namespace dsv4::opt {
namespace {

using namespace dsv4::kernels;  // the kernels' row logic and launch policy under test

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

// The power-of-two path of BlockTableView::lookup against plain 64-bit arithmetic, over the
// same edge ids: its one compare must be exact, not only safe.
TEST(BlockTableView, PowerOfTwoLookupMatchesWideArithmetic) {
  for (int32_t B : {1, 2, 4, 64, 256, 1 << 20}) {
    const int64_t max_safe = (int64_t{INT32_MAX} - (B - 1)) / B;
    std::vector<int32_t> ids = {0, 1, -1, INT32_MIN, INT32_MAX, static_cast<int32_t>(INT32_MAX / B)};
    for (int64_t d = -2; d <= 3; ++d) ids.push_back(static_cast<int32_t>(max_safe + d));
    const BlockTableView view = BlockTableView::make(ids.data(), 1, static_cast<int32_t>(ids.size()), B);
    ASSERT_TRUE(view.power_of_two);
    for (int32_t block = 0; block <= static_cast<int32_t>(ids.size()); ++block) {
      for (int32_t offset : {0, 1, B / 2, B - 1}) {
        if (offset >= B || int64_t{block} * B + offset > INT32_MAX) continue;
        const int32_t i = block * B + offset;
        int64_t want = -1;
        if (block < static_cast<int32_t>(ids.size()) && ids[static_cast<size_t>(block)] >= 0) {
          want = int64_t{ids[static_cast<size_t>(block)]} * B + offset;
          if (want > INT32_MAX) want = -1;
        }
        for (bool wanted : {true, false}) {
          int32_t errors = 0;
          const int32_t got = view.lookup<true>(view.row(0), i, wanted, &errors);
          ASSERT_EQ(got, wanted ? want : -1) << "B " << B << " block " << block << " offset " << offset;
          ASSERT_EQ(errors, wanted && want < 0 ? 1 : 0) << "B " << B << " block " << block;
        }
      }
    }
  }
  EXPECT_FALSE(BlockTableView::make(nullptr, 0, 0, 3).power_of_two);
  EXPECT_FALSE(BlockTableView::make(nullptr, 0, 0, 100).power_of_two);
}

// Rows in the narrowest groups (SWA-only, C128A with short context: one wave of rows at once)
// alternate in blocks of 4 between their window first and their compressed passes first, so
// that a wave's window stores and top-k reads overlap; every wider group keeps the compressed
// passes first. The choice is the same for every row a warp holds (no divergence), and the host
// backend (a row per thread) never takes it.
TEST(LaunchShapePolicy, NarrowRowsAlternateWindowFirstInBlocksOfFour) {
  using P = MixedSparseIndicesPolicy;
  constexpr int32_t g = P::kMinGroupThreads;
  for (int32_t t = 0; t < 4; ++t) EXPECT_FALSE(builds_window_first(g, t)) << t;
  for (int32_t t = 4; t < 8; ++t) EXPECT_TRUE(builds_window_first(g, t)) << t;
  EXPECT_FALSE(builds_window_first(g, 8));
  EXPECT_TRUE(builds_window_first(g, 8191));
  for (int32_t wider = 2 * g; wider <= P::kCtaThreads; wider *= 2) {
    for (int32_t t = 0; t < 64; ++t) EXPECT_FALSE(builds_window_first(wider, t)) << wider << " " << t;
  }
  EXPECT_FALSE(builds_window_first(1, 5));  // the host backend
  const int32_t rows_per_warp = P::kWarpThreads / g;
  for (int32_t warp = 0; warp < 1000; ++warp) {
    const int32_t first = warp * rows_per_warp;
    for (int32_t t = first; t < first + rows_per_warp; ++t) {
      EXPECT_EQ(builds_window_first(g, t), builds_window_first(g, first)) << t;
    }
  }
}

// The hardware dispatches CTAs in block order, so the first blocks must build the longest
// rows: a launch's decode CTAs (a full top-k each) in order, then its prefill CTAs from the
// last (a prefill row's top-k grows with its position); the light first rows of a request
// fill the end of the last wave.
TEST(LaunchShapePolicy, BlocksBuildDecodeRowsThenTheLastPrefillRowsFirst) {
  using P = MixedSparseIndicesPolicy;
  EXPECT_EQ(cta_of_block(0, 1, 0), 0u);
  EXPECT_EQ(cta_of_block(0, 5, 0), 4u);
  EXPECT_EQ(cta_of_block(4, 5, 0), 0u);
  EXPECT_EQ(cta_of_block(0, 5, 2), 0u);  // decode CTAs 0 and 1 first, in order
  EXPECT_EQ(cta_of_block(1, 5, 2), 1u);
  EXPECT_EQ(cta_of_block(2, 5, 2), 4u);  // then prefill CTAs 4, 3, 2
  EXPECT_EQ(cta_of_block(4, 5, 2), 2u);
  EXPECT_EQ(cta_of_block(3, 5, 5), 3u);  // a decode-only launch: block order
  for (uint32_t grid = 1; grid <= 130; ++grid) {  // every CTA's rows built once
    for (uint32_t decode_ctas = 0; decode_ctas <= grid; ++decode_ctas) {
      std::vector<int> built(grid, 0);
      for (uint32_t block = 0; block < grid; ++block) ++built.at(cta_of_block(block, grid, decode_ctas));
      ASSERT_EQ(std::count(built.begin(), built.end(), 1), static_cast<std::ptrdiff_t>(grid)) << grid << " " << decode_ctas;
    }
  }
  // Flash C4A, prefill 8192: the first block holds row 8191.
  const LaunchShape shape = choose_launch_shape(8192, 160, 132);
  const auto grid = static_cast<uint32_t>(grid_ctas(shape, 8192));
  const int32_t rows_per_cta = P::kCtaThreads / shape.group_threads;
  EXPECT_EQ(static_cast<int32_t>(cta_of_block(0, grid, 0)) * rows_per_cta + rows_per_cta - 1, 8191);
}

TEST(LaunchShapePolicy, NarrowGroupsForManyRowsWiderForWideRowsAndForStepsThatCannotFillTheGpu) {
  using P = MixedSparseIndicesPolicy;
  const int32_t sms = 132;
  const int32_t c = P::kDefaultChunks;
  const int32_t g = P::kManyRowsGroupThreads;
  const int32_t covered = g * c * P::kMaxHalfPasses / 2;  // chunks a group of kManyRowsGroupThreads takes
  // Many narrow rows (at most kNarrowRowPasses passes in the narrowest group): that group.
  const int32_t narrow = P::kMinGroupThreads;
  EXPECT_EQ(choose_launch_shape(8192, 32, sms), (LaunchShape{narrow, c}));  // SWA-only
  EXPECT_EQ(choose_launch_shape(8192, 64, sms), (LaunchShape{narrow, c}));  // C128A, E = 128
  EXPECT_EQ(choose_launch_shape(8192, narrow * c * P::kNarrowRowPasses + 1, sms), (LaunchShape{g, c}));
  // Many rows: kManyRowsGroupThreads, as long as a row takes at most 4.5 passes (whole steps
  // and single builds on the H200: 2-2.5 passes and 5-9 were slower, bench/results/
  // 2026-12-03-h200-group-step-trial and 2026-12-03-h200-pass-rule-trial).
  EXPECT_EQ(P::kMaxHalfPasses, 9);
  EXPECT_EQ(choose_launch_shape(8192, 128, sms), (LaunchShape{g, c}));      // Flash C4A compressed part: 4 passes
  EXPECT_EQ(choose_launch_shape(8192, 160, sms), (LaunchShape{2 * g, c}));  // Flash C4A 512, whole row: 2.5
  EXPECT_EQ(choose_launch_shape(8192, 256, sms), (LaunchShape{2 * g, c}));  // Pro C4A compressed part: 4
  EXPECT_EQ(choose_launch_shape(8192, 288, sms), (LaunchShape{2 * g, c}));  // Pro C4A 1024 / C128A after 120K: 4.5
  EXPECT_EQ(choose_launch_shape(8192, 289, sms), (LaunchShape{4 * g, c}));
  EXPECT_EQ(choose_launch_shape(8192, covered, sms), (LaunchShape{g, c}));
  EXPECT_EQ(choose_launch_shape(8192, covered + 1, sms), (LaunchShape{2 * g, c}));
  EXPECT_EQ(choose_launch_shape(8192, 1, sms, 8), (LaunchShape{narrow, 8}));
  EXPECT_EQ(g, P::kManyRowsGroupThreads);
  EXPECT_EQ(choose_launch_shape(8192, 1 << 30, sms).group_threads, P::kCtaThreads);
  // A step too small for kMinCtasPerSm CTAs per SM at g takes wider groups (more CTAs) until
  // it has them, up to a CTA per row.
  const int32_t rows_per_cta = P::kCtaThreads / g;
  const int32_t enough = sms * P::kMinCtasPerSm * rows_per_cta;
  EXPECT_EQ(choose_launch_shape(enough, 128, sms).group_threads, g);
  EXPECT_EQ(choose_launch_shape(enough - rows_per_cta, 128, sms).group_threads, 2 * g);
  const int32_t enough_narrow = sms * P::kMinCtasPerSm * (P::kCtaThreads / narrow);
  EXPECT_EQ(choose_launch_shape(enough_narrow, 32, sms).group_threads, narrow);
  EXPECT_EQ(choose_launch_shape(enough_narrow - P::kCtaThreads / narrow, 32, sms).group_threads, 2 * narrow);
  EXPECT_EQ(choose_launch_shape(1024, 160, sms), (LaunchShape{64, c}));  // C4A 1K: 256 CTAs
  EXPECT_EQ(choose_launch_shape(1024, 32, sms), (LaunchShape{64, c}));   // SWA-only 1K
  EXPECT_EQ(choose_launch_shape(64, 32, sms).group_threads, P::kCtaThreads);  // a CTA per row
  EXPECT_EQ(choose_launch_shape(1, 32, sms).group_threads, P::kCtaThreads);
  EXPECT_EQ(choose_launch_shape(0, 32, sms).group_threads, P::kCtaThreads);
  // Grid: every row at once, one CTA per kCtaThreads / group rows.
  EXPECT_EQ(grid_ctas(LaunchShape{8, 4}, 8192), 8192 / 32);
  EXPECT_EQ(grid_ctas(LaunchShape{8, 4}, 8193), 8192 / 32 + 1);
  EXPECT_EQ(grid_ctas(LaunchShape{64, 4}, 8192), 8192 / 4);
  EXPECT_EQ(grid_ctas(LaunchShape{256, 4}, 1), 1);
  EXPECT_EQ(grid_ctas(LaunchShape{256, 4}, 0), 0);
  EXPECT_EQ(grid_ctas(LaunchShape{8, 4}, INT32_MAX), (int64_t{INT32_MAX} + 31) / 32);
  // Decode-only rows of up to 1024 chunks: a CTA per row, the chunks rounded up to warps.
  EXPECT_TRUE(fits_decode_chunks(1));
  EXPECT_TRUE(fits_decode_chunks(P::kDecodeRowMaxChunks));
  EXPECT_FALSE(fits_decode_chunks(P::kDecodeRowMaxChunks + 1));
  EXPECT_FALSE(fits_decode_chunks(0));
  EXPECT_EQ(decode_chunk_shape(32), (LaunchShape{32, 1, true}));    // SWA-only, W = 128
  EXPECT_EQ(decode_chunk_shape(160), (LaunchShape{160, 1, true}));  // C4A, Kd = 512
  EXPECT_EQ(decode_chunk_shape(161), (LaunchShape{192, 1, true}));
  EXPECT_EQ(decode_chunk_shape(1), (LaunchShape{32, 1, true}));
  EXPECT_EQ(grid_ctas(decode_chunk_shape(160), 64), 64);
  EXPECT_TRUE(valid_group_threads(8));
  EXPECT_TRUE(valid_group_threads(256));
  EXPECT_FALSE(valid_group_threads(0));
  EXPECT_FALSE(valid_group_threads(4));
  EXPECT_FALSE(valid_group_threads(48));
  EXPECT_FALSE(valid_group_threads(512));
}

// kDecodeChunkArgs: the build's args cut to DecodeChunkArgs and expanded back, as the
// decode-chunk kernel gets them (decode-only builds on the power-of-two 16-byte path only).
// kPrefillRowsArgs: likewise PrefillRowsArgs (builds of prefill rows only on that path, whole or
// parts), in the form prefill_rows_kernel's launch picks (prefill_gathers_lookups);
// kGatheredLookups: the same builds of whole rows, every one in the gathered-lookups form (C4A's
// scattered picks, partial chunks and bad entries too, not only the C128A rows it is launched for).
enum class Path { kAsChosen, kScalar, kGeneralBlockMath, kDecodeChunkArgs, kPrefillRowsArgs, kGatheredLookups };

// Whether `path` applies to `a` (kDecodeChunkArgs: the decode-chunk kernel's builds), and `a`
// as that path builds it.
bool take_path(Path path, MixedSparseIndicesArgs& a) {
  if (path == Path::kScalar) a.vector_path = false;
  if (path == Path::kGeneralBlockMath) a.power_of_two_blocks = false;  // the divider is exact too
  if (path == Path::kDecodeChunkArgs) {
    if (a.num_decode_tokens != a.num_tokens || !a.power_of_two_blocks || !a.vector_path) return false;
    a = DecodeChunkArgs::of(a).expand();
  }
  if (path == Path::kPrefillRowsArgs || path == Path::kGatheredLookups) {
    if (a.num_decode_tokens != 0 || !a.power_of_two_blocks || !a.vector_path) return false;
    if (path == Path::kGatheredLookups && !whole_row_build(a)) return false;
    a = PrefillRowsArgs::of(a).expand();
  }
  return true;
}

// Every non-empty matrix input has 16-byte rows: an aligned start and a stride of 4k elements.
bool all_input_rows_16_byte_aligned(const BuildRequest& r) {
  for (const Int32Matrix* m : {&r.decode_swa_indices, &r.decode_compressed, &r.prefill_topk}) {
    if (m->cols == 0 || m->rows == 0) continue;
    if (reinterpret_cast<uintptr_t>(m->data) % 16 != 0 || m->row_stride % 4 != 0) return false;
  }
  return true;
}

// Every row as a group of `group_threads` ranks would build it on the GPU, kChunks chunks per
// pass (picks summed over the group, rank 0's plan writing the length), or as the host
// backend does (a group of one, one chunk). A whole-row build takes the whole-row code the
// GPU kernels compile for it (kParts = false), as they do. kRows: the row kinds the code is
// compiled for (the both-kinds code, or the prefill-only code prefill_rows_kernel runs).
template <bool kPowerOfTwo, bool kVec4, int kChunks, RowKinds kRows, bool kParts, bool kGatherLookups = false>
int64_t build_row_as_group(const MixedSparseIndicesArgs& a, int32_t t, int32_t group_threads) {
  int32_t picks = 0;
  int32_t row_errors = 0;
  RowShare first{};
  for (int32_t rank = 0; rank < group_threads; ++rank) {
    const RowShare share = build_row_share<kPowerOfTwo, kVec4, kChunks, kRows, false, kParts, kGatherLookups>(
        a, t, rank, group_threads, &row_errors);
    if (rank == 0) first = share;
    picks += share.picks;
  }
  finish_row<false, kParts>(a, first, picks, &row_errors);
  return row_errors;
}

template <bool kPowerOfTwo, bool kVec4, int kChunks, RowKinds kRows = RowKinds::kBoth>
int64_t build_row_as_group(const MixedSparseIndicesArgs& a, int32_t t, int32_t group_threads) {
  return whole_row_build(a) ? build_row_as_group<kPowerOfTwo, kVec4, kChunks, kRows, false>(a, t, group_threads)
                            : build_row_as_group<kPowerOfTwo, kVec4, kChunks, kRows, true>(a, t, group_threads);
}

template <bool kPowerOfTwo, bool kVec4, int kChunks, RowKinds kRows = RowKinds::kBoth>
int64_t build_as_groups(const MixedSparseIndicesArgs& a, int32_t group_threads) {
  int64_t errors = 0;
  for (int32_t t = 0; t < a.num_tokens; ++t) {
    errors += build_row_as_group<kPowerOfTwo, kVec4, kChunks, kRows>(a, t, group_threads);
  }
  return errors;
}

template <bool kPowerOfTwo, bool kVec4>
int64_t build_as_groups(const MixedSparseIndicesArgs& a, int32_t group_threads, int32_t chunks) {
  switch (chunks) {
    case 1: return build_as_groups<kPowerOfTwo, kVec4, 1>(a, group_threads);
    case 2: return build_as_groups<kPowerOfTwo, kVec4, 2>(a, group_threads);
    case 4: return build_as_groups<kPowerOfTwo, kVec4, 4>(a, group_threads);
    default: return build_as_groups<kPowerOfTwo, kVec4, 8>(a, group_threads);
  }
}

// Every row of a whole-row build of prefill rows in the gathered-lookups form.
int64_t build_gathered_as_groups(const MixedSparseIndicesArgs& a, int32_t group_threads) {
  int64_t errors = 0;
  for (int32_t t = 0; t < a.num_tokens; ++t) {
    errors += build_row_as_group<true, true, MixedSparseIndicesPolicy::kDefaultChunks, RowKinds::kPrefill, false, true>(
        a, t, group_threads);
  }
  return errors;
}

// The instance for the block math and path `a` asks for; on Path::kPrefillRowsArgs the one
// prefill_rows_kernel's launch picks (prefill rows only, its chunk count: `chunks` is not used).
int64_t build_as_groups(const MixedSparseIndicesArgs& a, int32_t group_threads, int32_t chunks,
                        Path path = Path::kAsChosen) {
  if (path == Path::kGatheredLookups ||
      (path == Path::kPrefillRowsArgs && prefill_gathers_lookups(a.ratio, group_threads, whole_row_build(a)))) {
    return build_gathered_as_groups(a, group_threads);
  }
  if (path == Path::kPrefillRowsArgs) {
    return build_as_groups<true, true, MixedSparseIndicesPolicy::kDefaultChunks, RowKinds::kPrefill>(a, group_threads);
  }
  if (a.power_of_two_blocks) {
    return a.vector_path ? build_as_groups<true, true>(a, group_threads, chunks)
                         : build_as_groups<true, false>(a, group_threads, chunks);
  }
  return a.vector_path ? build_as_groups<false, true>(a, group_threads, chunks)
                       : build_as_groups<false, false>(a, group_threads, chunks);
}

// `plan` (T entries; prefill rows only): written by the build when `plan_mode` is kWrite, read
// in place of the rows' metadata when kRead (the builder's first and later builds of a step).
enum class PlanMode { kNone, kWrite, kRead };
::testing::AssertionResult groups_match_reference(const ref::BuilderInputs& in, int32_t group_threads,
                                                  int32_t chunks, Path path, const harness::RequestLayout& layout,
                                                  PlanMode plan_mode = PlanMode::kNone,
                                                  TokenPlanEntry* plan = nullptr) {
  const ref::BuilderOutput expected = ref::build_mixed_sparse_indices(in);
  harness::StagedRequest staged(Backend::kHost, in, layout);
  const int32_t T = staged.request().num_tokens;
  const int32_t width = static_cast<int32_t>(expected.sparse_indices.cols());
  const size_t count = static_cast<size_t>(T) * static_cast<size_t>(width);
  int32_t* indices = static_cast<int32_t*>(allocate_host((count + 1) * sizeof(int32_t)));
  int32_t* lens = static_cast<int32_t*>(allocate_host((static_cast<size_t>(T) + 1) * sizeof(int32_t)));
  for (size_t i = 0; i < count; ++i) indices[i] = 0x5a5a5a5a;
  for (int32_t t = 0; t < T; ++t) lens[t] = 0x5a5a5a5a;
  MixedSparseIndicesArgs a =
      make_mixed_sparse_indices_args(staged.request(), BuiltIndices{indices, lens, T, width, width}, nullptr);
  if (a.row_width != width) return ::testing::AssertionFailure() << "row_width " << a.row_width;
  if (a.vector_path && in.window % 4 != 0) {
    return ::testing::AssertionFailure() << "vector_path for W = " << in.window;
  }
  if (a.vector_path != (in.window % 4 == 0 && all_input_rows_16_byte_aligned(staged.request()))) {
    return ::testing::AssertionFailure() << "vector_path " << a.vector_path << " for W = " << in.window;
  }
  // The 32-bit fast path: power-of-two blocks without span or offset (SPEC §7).
  const auto fast = [](const ref::PagedCache& c) {
    return c.block_size > 0 && (c.block_size & (c.block_size - 1)) == 0 && c.span() == c.block_size &&
           c.base_offset == 0;
  };
  const bool want_pow2 = fast(in.swa) && (!in.compressed.has_value() || fast(*in.compressed));
  if (a.power_of_two_blocks != want_pow2) {
    return ::testing::AssertionFailure() << "power_of_two_blocks " << a.power_of_two_blocks;
  }
  if (plan_mode == PlanMode::kWrite) a.token_plan_out = plan;
  if (plan_mode == PlanMode::kRead) a.token_plan_in = plan;
  if (!take_path(path, a)) {
    release_host(indices);
    release_host(lens);
    return ::testing::AssertionSuccess() << "path not taken";
  }
  const int64_t errors = build_as_groups(a, group_threads, chunks, path);
  harness::HostIndices actual;
  actual.sparse_indices = Eigen::Map<const ref::IndexMatrix>(indices, T, width);
  actual.sparse_lens = Eigen::Map<const ref::IndexVector>(lens, T);
  release_host(indices);
  release_host(lens);
  harness::Mismatch where;
  where.backend = "host, as GPU groups";
  where.window = in.window;
  return testing::no_mismatch(
      harness::compare_build(expected, actual, errors, static_cast<int32_t>(in.decode_swa_indices.rows()), where));
}

TEST(RowLogicAsGpuGroups, RandomBuildsOnEveryPathGroupAndChunkCount) {
  for (uint64_t seed = 0; seed < 150; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), 50000 + seed);
    const harness::RequestLayout staging = harness::draw(harness::gen_request_layout(), 50000 + seed);
    for (int32_t group : {1, 8, 16, 32, 64, 256}) {
      for (int32_t chunks : {1, 2, 4, 8}) {
        if ((seed + static_cast<uint64_t>(group) + static_cast<uint64_t>(chunks)) % 3 != 0) continue;
        for (Path path : {Path::kAsChosen, Path::kScalar, Path::kGeneralBlockMath}) {
          ASSERT_TRUE(groups_match_reference(in, group, chunks, path, staging))
              << "seed " << 50000 + seed << " group " << group << " chunks " << chunks << " path "
              << static_cast<int>(path) << ": " << harness::describe(in);
        }
      }
    }
  }
}

// SPEC §8 parts as GPU groups: each part of a random build, built by groups of 1 to 256 ranks
// over poisoned memory, leaves exactly what testing::reference_part says (its columns of the
// reference's rows, the poison elsewhere) and counts its columns' content errors.
// `token_to_req`: what the build is given to read in place of the step's own (T entries).
::testing::AssertionResult part_matches_reference(const ref::BuilderInputs& in, RowPart part, int32_t group_threads,
                                                  int32_t chunks, Path path, const harness::RequestLayout& layout,
                                                  const int32_t* token_to_req = nullptr) {
  harness::StagedRequest staged(Backend::kHost, in, layout);
  BuildRequest request = staged.request();
  request.part = part;
  if (token_to_req != nullptr) request.token_to_req = token_to_req;
  const int32_t T = request.num_tokens;
  const int32_t width = part_output_width(request);
  std::vector<int32_t> indices(static_cast<size_t>(T) * static_cast<size_t>(width) + 1, testing::kPoisonedIndex);
  std::vector<int32_t> lens(static_cast<size_t>(T) + 1, testing::kPoisonedLength);
  MixedSparseIndicesArgs a =
      make_mixed_sparse_indices_args(request, BuiltIndices{indices.data(), lens.data(), T, width, width}, nullptr);
  if (!take_path(path, a)) return ::testing::AssertionSuccess() << "path not taken";
  const int64_t errors = build_as_groups(a, group_threads, chunks, path);
  if (indices.back() != testing::kPoisonedIndex || lens.back() != testing::kPoisonedLength) {
    return ::testing::AssertionFailure() << "written past the output";
  }
  harness::HostIndices actual;
  actual.sparse_indices = Eigen::Map<const ref::IndexMatrix>(indices.data(), T, width);
  actual.sparse_lens = Eigen::Map<const ref::IndexVector>(lens.data(), T);
  harness::Mismatch where;
  where.backend = "host, as GPU groups";
  where.path = row_part_name(part);
  where.window = part == RowPart::kCompressed ? 0 : in.window;
  return testing::no_mismatch(harness::compare_build(testing::reference_part(in, part), actual, errors,
                                                     static_cast<int32_t>(in.decode_swa_indices.rows()), where));
}

TEST(RowLogicAsGpuGroups, EveryPartOfRandomBuildsOnEveryPathAndGroup) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), 52000 + seed);
    const harness::RequestLayout staging = harness::draw(harness::gen_request_layout(), 52000 + seed);
    for (RowPart part : {RowPart::kWindow, RowPart::kCompressed, RowPart::kTail}) {
      for (int32_t group : {1, 8, 32, 256}) {
        const int32_t chunks = group == 8 ? 1 : 2;
        for (Path path : {Path::kAsChosen, Path::kScalar, Path::kGeneralBlockMath}) {
          if ((seed + static_cast<uint64_t>(group) + static_cast<uint64_t>(path)) % 2 != 0) continue;
          ASSERT_TRUE(part_matches_reference(in, part, group, chunks, path, staging))
              << "seed " << 52000 + seed << " part " << row_part_name(part) << " group " << group << " path "
              << static_cast<int>(path) << ": " << harness::describe(in);
        }
      }
    }
  }
}

// DecodeChunkArgs carries a whole decode-only build: random decode-only builds on the
// decode-chunk kernel's path (power-of-two blocks, 16-byte rows), whole and in every SPEC §8
// part, built from their args cut to DecodeChunkArgs and expanded back (as that kernel gets
// them) match the reference; a field the cut drops but a decode row reads breaks them.
TEST(DecodeChunkArgs, CarryEveryDecodeOnlyBuildAndPartOnTheDecodeChunkPath) {
  harness::BuildLimits decodes;
  decodes.decode_only = true;
  int32_t taken = 0;
  const auto count = [&taken](const ::testing::AssertionResult& result) {
    if (std::string(result.message()) != "path not taken") ++taken;
    return result;
  };
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(decodes), 54000 + seed);
    const harness::RequestLayout staging = harness::draw(harness::gen_request_layout(), 54000 + seed);
    for (int32_t group : {1, 32}) {
      ASSERT_TRUE(count(groups_match_reference(in, group, 1, Path::kDecodeChunkArgs, staging)))
          << "seed " << 54000 + seed << " group " << group << ": " << harness::describe(in);
      for (RowPart part : {RowPart::kWindow, RowPart::kCompressed, RowPart::kTail}) {
        ASSERT_TRUE(count(part_matches_reference(in, part, group, 1, Path::kDecodeChunkArgs, staging)))
            << "seed " << 54000 + seed << " part " << row_part_name(part) << " group " << group << ": "
            << harness::describe(in);
      }
    }
  }
  EXPECT_GE(taken, 500) << "too few builds on the decode-chunk path to say anything";
}

// PrefillRowsArgs carries a whole build of prefill rows: random prefill-only builds on the fast
// path, built from their args cut to PrefillRowsArgs and expanded back by the row code
// prefill_rows_kernel runs (prefill rows only, its chunk count), match the reference whole
// (without a token plan, writing one, and reading the plan they wrote, as a step's first and
// later builds do) and in every SPEC §8 part.
TEST(PrefillRowsArgs, CarryEveryPrefillOnlyBuildOnTheFastPath) {
  harness::BuildLimits prefills;
  prefills.max_decode_query = 0;  // decode requests without tokens: prefill rows only
  int32_t taken = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(prefills), 56000 + seed);
    const harness::RequestLayout staging = harness::draw(harness::gen_request_layout(), 56000 + seed);
    std::vector<TokenPlanEntry> plan(in.token_to_req.size() + 1, TokenPlanEntry{-7, -7});
    for (int32_t group : {1, 8, 32, 256}) {
      for (PlanMode mode : {PlanMode::kNone, PlanMode::kWrite, PlanMode::kRead}) {
        const ::testing::AssertionResult result =
            groups_match_reference(in, group, 2, Path::kPrefillRowsArgs, staging, mode, plan.data());
        ASSERT_TRUE(result) << "seed " << 56000 + seed << " group " << group << " plan mode "
                            << static_cast<int>(mode) << ": " << harness::describe(in);
        if (std::string(result.message()) != "path not taken") ++taken;
      }
      for (RowPart part : {RowPart::kWindow, RowPart::kCompressed, RowPart::kTail}) {
        const ::testing::AssertionResult result =
            part_matches_reference(in, part, group, 2, Path::kPrefillRowsArgs, staging);
        ASSERT_TRUE(result) << "seed " << 56000 + seed << " part " << row_part_name(part) << " group " << group
                            << ": " << harness::describe(in);
        if (std::string(result.message()) != "path not taken") ++taken;
      }
      // ... and the plan is read, not bypassed: a plan of requests out of range breaks every row.
      std::vector<TokenPlanEntry> wrong(plan.size(), TokenPlanEntry{-1, 0});
      const ::testing::AssertionResult result =
          groups_match_reference(in, group, 2, Path::kPrefillRowsArgs, staging, PlanMode::kRead, wrong.data());
      if (in.token_to_req.size() > 0 && std::string(result.message()) != "path not taken") {
        EXPECT_FALSE(result) << "seed " << 56000 + seed << " group " << group << ": the plan was not read";
      }
    }
  }
  EXPECT_GE(taken, 500) << "too few builds on the prefill fast path to say anything";
}

// The gathered-lookups form (prefill_rows_kernel<G, false, true>) builds every whole prefill-only
// build on the fast path exactly, whatever its kind: random builds (C4A's scattered picks, rows
// that end mid-chunk, table entries past the safe range) in groups of 1, 8, 32 and 256, without
// a token plan, writing one and reading it.
TEST(GatheredLookups, MatchTheReferenceOnEveryWholePrefillOnlyBuild) {
  harness::BuildLimits prefills;
  prefills.max_decode_query = 0;
  int32_t taken = 0;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(prefills), 57000 + seed);
    const harness::RequestLayout staging = harness::draw(harness::gen_request_layout(), 57000 + seed);
    std::vector<TokenPlanEntry> plan(in.token_to_req.size() + 1, TokenPlanEntry{-7, -7});
    for (int32_t group : {1, 8, 32, 256}) {
      for (PlanMode mode : {PlanMode::kNone, PlanMode::kWrite, PlanMode::kRead}) {
        const ::testing::AssertionResult result =
            groups_match_reference(in, group, 2, Path::kGatheredLookups, staging, mode, plan.data());
        ASSERT_TRUE(result) << "seed " << 57000 + seed << " group " << group << " plan mode "
                            << static_cast<int>(mode) << ": " << harness::describe(in);
        if (std::string(result.message()) != "path not taken") ++taken;
      }
    }
  }
  EXPECT_GE(taken, 500) << "too few builds on the prefill fast path to say anything";
}

// The builds that take it: whole rows of C128A (any kind but C4A) in groups wider than 8 threads,
// i.e. C128A after long context; C4A, the narrow rows and SPEC §8 parts keep their kernels.
TEST(GatheredLookups, TakenByWholeC128aRowsInGroupsWiderThanEight) {
  EXPECT_TRUE(prefill_gathers_lookups(128, 32, true));
  EXPECT_TRUE(prefill_gathers_lookups(128, 16, true));
  EXPECT_TRUE(prefill_gathers_lookups(128, 256, true));
  EXPECT_FALSE(prefill_gathers_lookups(128, 8, true));    // C128A 8K: 64 values a row
  EXPECT_FALSE(prefill_gathers_lookups(128, 32, false));  // a SPEC §8 part
  EXPECT_FALSE(prefill_gathers_lookups(4, 32, true));     // C4A
  EXPECT_FALSE(prefill_gathers_lookups(4, 16, true));
  // The benchmark's C128A prefills of 8K tokens on 132 SMs (W = 128): after 120K of context
  // (E = 1,152: 320 chunks a row, groups of 64) gathered, without context (E = 128: groups of 8) not.
  EXPECT_EQ(choose_launch_shape(8192, (128 + 1152) / 4, 132).group_threads, 64);
  EXPECT_TRUE(prefill_gathers_lookups(128, choose_launch_shape(8192, (128 + 1152) / 4, 132).group_threads, true));
  EXPECT_FALSE(prefill_gathers_lookups(128, choose_launch_shape(8192, (128 + 128) / 4, 132).group_threads, true));
}

// The first layer of each kind in `schedule`, by LayerKind (SWA-only, C4A, C128A); -1 where
// the schedule has none.
std::array<int32_t, 3> first_layer_of_each_kind(const ref::ModelSchedule& schedule) {
  std::array<int32_t, 3> first{-1, -1, -1};
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    int32_t& f = first[static_cast<size_t>(ref::layer_kind_from_ratio(schedule.compress_ratios[layer]))];
    if (f < 0) f = layer;
  }
  return first;
}

// The fast prefill row (power-of-two blocks, 16-byte rows) builds every SPEC §8 part of
// production-shaped layers, grouped as the GPU groups them: the prefill rows of a Flash step's
// SWA-only, C4A and C128A layers (W = 128, top-k 512, blocks of 64 and 256) at the start of a
// request (partial windows, top-k lengths that end mid-chunk) and after 2,100 tokens of
// context, beside decode rows; every part kernel_args.cpp makes is one it takes.
TEST(RowLogicAsGpuGroups, FastPrefillRowBuildsEveryPartOfProductionLayers) {
  const ref::ModelSchedule flash = ref::deepseek_v4_flash();
  for (int32_t context : {0, 2100}) {
    harness::StepShape shape;
    shape.num_decodes = 3;
    shape.decode_context = 700;
    shape.num_prefills = 2;
    shape.prefill_tokens_each = 37;
    shape.prefill_context = context;
    const ref::Step step = harness::make_step(shape);
    const std::vector<ref::C4aIndexerOutput> c4a = harness::make_c4a_indexer_outputs(step, flash, 11);
    for (int32_t layer : first_layer_of_each_kind(flash)) {
      ASSERT_GE(layer, 0);
      const ref::BuilderInputs in = ref::layer_builder_inputs(step, flash, layer, &c4a[static_cast<size_t>(layer)]);
      for (RowPart part : {RowPart::kWhole, RowPart::kWindow, RowPart::kCompressed, RowPart::kTail}) {
        harness::StagedRequest staged(Backend::kHost, in);
        BuildRequest request = staged.request();
        request.part = part;
        const int32_t width = part_output_width(request);
        std::vector<int32_t> out(static_cast<size_t>(width) * static_cast<size_t>(request.num_tokens));
        std::vector<int32_t> lens(static_cast<size_t>(request.num_tokens));
        const MixedSparseIndicesArgs a = make_mixed_sparse_indices_args(
            request, BuiltIndices{out.data(), lens.data(), request.num_tokens, width, width}, nullptr);
        ASSERT_TRUE(a.vector_path && a.power_of_two_blocks && fast_prefill_part(a)) << row_part_name(part);
        for (int32_t group : {1, 16, 64}) {
          EXPECT_TRUE(part_matches_reference(in, part, group, 2, Path::kAsChosen, {}))
              << "layer " << layer << " context " << context << " part " << row_part_name(part) << " group " << group;
        }
      }
    }
  }
}

// The parts the fast prefill row takes: the window, the compressed columns in place or shifted
// to column 0, or both; any other column range goes to the general row.
TEST(RowLogicAsGpuGroups, FastPrefillPartsAreTheWindowTheCompressedColumnsOrBoth) {
  MixedSparseIndicesArgs a{};
  a.window = 128;
  a.row_width = 640;
  const auto part = [&](int32_t first, int32_t end, int32_t shift) {
    MixedSparseIndicesArgs b = a;
    b.first_column = first;
    b.end_column = end;
    b.output_shift = shift;
    return fast_prefill_part(b);
  };
  EXPECT_TRUE(part(0, 640, 0));
  EXPECT_TRUE(part(0, 128, 0));
  EXPECT_TRUE(part(128, 640, 0));
  EXPECT_TRUE(part(128, 640, 128));
  EXPECT_FALSE(part(4, 640, 0));
  EXPECT_FALSE(part(0, 636, 0));
  EXPECT_FALSE(part(128, 640, 4));
  EXPECT_FALSE(part(0, 128, 128));
}

// SPEC §8 one launch on the host: the multi-build grid CTA by CTA (each CTA's rows built by its
// build, as groups of the launch's size) gives every build's own output, each row once.
TEST(MultiBuild, EveryCtaBuildsTheRowsOfItsBuild) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(), 53000 + seed);
    const ref::BuilderInputs segment_inputs = ref::window_segment_inputs(in);
    harness::StagedRequest staged(Backend::kHost, in), segment(Backend::kHost, segment_inputs);
    BuildRequest requests[3] = {segment.request(), staged.request(), staged.request()};
    requests[0].part = RowPart::kWindow;
    requests[1].part = RowPart::kCompressed;
    const ref::BuilderOutput want[3] = {testing::reference_part(segment_inputs, RowPart::kWindow),
                                        testing::reference_part(in, RowPart::kCompressed),
                                        testing::reference_part(in, RowPart::kWhole)};
    for (int32_t group : {8, 16, 64, 256}) {
      std::vector<int32_t> indices[3], lens[3];
      MixedSparseIndicesArgs args[3];
      for (int b = 0; b < 3; ++b) {
        const int32_t T = requests[b].num_tokens, width = part_output_width(requests[b]);
        indices[b].assign(static_cast<size_t>(T) * static_cast<size_t>(width), testing::kPoisonedIndex);
        lens[b].assign(static_cast<size_t>(T), testing::kPoisonedLength);
        args[b] = make_mixed_sparse_indices_args(requests[b], BuiltIndices{indices[b].data(), lens[b].data(), T, width, width},
                                                 nullptr);
      }
      const LaunchShape shape = multi_build_shape(args, 3, 132, LaunchShape{group, 2});
      ASSERT_EQ(shape.group_threads, group);
      const MultiBuildArgs m = multi_build_args(args, 3, shape);
      const int32_t rows_per_cta = MixedSparseIndicesPolicy::kCtaThreads / group;
      int64_t errors[3] = {0, 0, 0};
      std::vector<int32_t> built_rows[3];
      for (int b = 0; b < 3; ++b) built_rows[b].assign(static_cast<size_t>(args[b].num_tokens), 0);
      for (uint32_t cta = 0; cta < m.first_cta[3]; ++cta) {
        const int b = build_of_cta(m, cta);
        const MixedSparseIndicesArgs& a = m.builds[b];
        for (int32_t i = 0; i < rows_per_cta; ++i) {
          const int64_t t = static_cast<int64_t>(cta - m.first_cta[b]) * rows_per_cta + i;
          if (t >= a.num_tokens) continue;
          ++built_rows[b][static_cast<size_t>(t)];
          errors[b] += a.power_of_two_blocks
                           ? (a.vector_path ? build_row_as_group<true, true, 2>(a, static_cast<int32_t>(t), group)
                                            : build_row_as_group<true, false, 2>(a, static_cast<int32_t>(t), group))
                           : (a.vector_path ? build_row_as_group<false, true, 2>(a, static_cast<int32_t>(t), group)
                                            : build_row_as_group<false, false, 2>(a, static_cast<int32_t>(t), group));
        }
      }
      for (int b = 0; b < 3; ++b) {
        ASSERT_TRUE(std::all_of(built_rows[b].begin(), built_rows[b].end(), [](int32_t n) { return n == 1; }))
            << "build " << b << " seed " << 53000 + seed;
        harness::HostIndices actual;
        actual.sparse_indices =
            Eigen::Map<const ref::IndexMatrix>(indices[b].data(), args[b].num_tokens, part_output_width(requests[b]));
        actual.sparse_lens = Eigen::Map<const ref::IndexVector>(lens[b].data(), args[b].num_tokens);
        harness::Mismatch where;
        where.backend = "host, as one launch";
        where.path = "build " + std::to_string(b);
        where.window = b == 1 ? 0 : in.window;
        ASSERT_TRUE(testing::no_mismatch(harness::compare_build(want[b], actual, errors[b],
                                                                static_cast<int32_t>(in.decode_swa_indices.rows()), where)))
            << "seed " << 53000 + seed << " group " << group << ": " << harness::describe(in);
      }
    }
  }
}

// Which builds share one launch: 2 to kMaxBuildsPerLaunch of one step's row kinds, 16-byte rows,
// power-of-two blocks, host-sized without padding rows.
TEST(MultiBuild, CanBuildTogetherOnlyWhatItsKernelCompiles) {
  harness::StagedRequest staged(Backend::kHost, harness::tiny_c4a());
  std::vector<int32_t> out(64), lens(4);
  MixedSparseIndicesArgs a =
      make_mixed_sparse_indices_args(staged.request(), BuiltIndices{out.data(), lens.data(), 3, 8, 8}, nullptr);
  a.vector_path = true;  // (the tiny batch's Kd = 2 rows are not 16-byte rows)
  ASSERT_TRUE(a.power_of_two_blocks);
  MixedSparseIndicesArgs builds[kMaxBuildsPerLaunch + 1] = {a, a, a, a, a};
  EXPECT_TRUE(can_build_together(builds, 2));
  EXPECT_TRUE(can_build_together(builds, kMaxBuildsPerLaunch));
  EXPECT_FALSE(can_build_together(builds, 1));
  EXPECT_FALSE(can_build_together(builds, kMaxBuildsPerLaunch + 1));
  const auto with = [&](auto change) {
    MixedSparseIndicesArgs other[2] = {a, a};
    change(other[1]);
    return can_build_together(other, 2);
  };
  EXPECT_FALSE(with([](MixedSparseIndicesArgs& b) { b.vector_path = false; }));
  EXPECT_FALSE(with([](MixedSparseIndicesArgs& b) { b.power_of_two_blocks = false; }));
  EXPECT_FALSE(with([](MixedSparseIndicesArgs& b) { b.num_rows = b.num_tokens + 1; }));
  EXPECT_FALSE(with([](MixedSparseIndicesArgs& b) { b.num_decode_tokens = 0; }));  // prefill-only next to mixed
  StepSizes sizes{};
  EXPECT_FALSE(with([&](MixedSparseIndicesArgs& b) { b.run_time_sizes = &sizes; }));
  const MultiBuildArgs m = multi_build_args(builds, 3, LaunchShape{16, 2});  // 3 rows: one CTA each
  EXPECT_EQ(m.first_cta[3], 3u);
  EXPECT_EQ(build_of_cta(m, 0), 0);
  EXPECT_EQ(build_of_cta(m, 2), 2);
}

// Wide rows (a group's ranks each own chunks in several passes) and the tiny batch.
TEST(RowLogicAsGpuGroups, WideRowsAndTinyBatch) {
  harness::BuildLimits wide;
  wide.max_topk = 1500;
  wide.max_context = 3000;
  wide.max_requests = 3;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(wide), 60000 + seed);
    for (int32_t group : {8, 32, 256}) {
      for (int32_t chunks : {2, 8}) {
        ASSERT_TRUE(groups_match_reference(in, group, chunks, Path::kAsChosen, {})) << harness::describe(in);
      }
    }
  }
  for (const ref::BuilderInputs& in : {harness::tiny_swa_only(), harness::tiny_c128a(), harness::tiny_c4a()}) {
    for (int32_t group : {1, 8, 16, 32, 64, 256}) {
      for (int32_t chunks : {1, 2, 4, 8}) {
        EXPECT_TRUE(groups_match_reference(in, group, chunks, Path::kAsChosen, {}));
        EXPECT_TRUE(groups_match_reference(in, group, chunks, Path::kGeneralBlockMath, {}));
      }
    }
  }
}

// A step of one request: after validation (SPEC §4) every token_to_req entry is 0, so an
// unchecked prefill row takes request 0 without reading it (start_row), and its metadata is the
// last request's, loaded at the row's start. Given a token_to_req of 7s (a read would fail every
// row: -1, one error each), every path and part still builds the reference's prefill rows of
// each layer kind, at the start of a request and after context. (Decode rows still read it.)
TEST(RowLogicAsGpuGroups, UncheckedRowsOfAOneRequestStepDoNotReadTokenToReq) {
  const ref::ModelSchedule flash = ref::deepseek_v4_flash();
  harness::StepShape prefill_at_start, prefill_after_context;
  prefill_at_start.num_prefills = prefill_after_context.num_prefills = 1;
  prefill_at_start.prefill_tokens_each = prefill_after_context.prefill_tokens_each = 45;
  prefill_after_context.prefill_context = 2100;
  for (const harness::StepShape& shape : {prefill_at_start, prefill_after_context}) {
    const ref::Step step = harness::make_step(shape);
    const std::vector<ref::C4aIndexerOutput> c4a = harness::make_c4a_indexer_outputs(step, flash, 13);
    for (int32_t layer : first_layer_of_each_kind(flash)) {
      ASSERT_GE(layer, 0);
      const ref::BuilderInputs in = ref::layer_builder_inputs(step, flash, layer, &c4a[static_cast<size_t>(layer)]);
      ASSERT_EQ(in.query_start_loc.size(), 2);  // one request
      const std::vector<int32_t> sevens(static_cast<size_t>(in.token_to_req.size()), 7);
      for (RowPart part : {RowPart::kWhole, RowPart::kWindow, RowPart::kCompressed, RowPart::kTail}) {
        for (Path path : {Path::kAsChosen, Path::kScalar, Path::kGeneralBlockMath, Path::kDecodeChunkArgs,
                          Path::kPrefillRowsArgs, Path::kGatheredLookups}) {
          for (int32_t group : {1, 8, 64}) {
            EXPECT_TRUE(part_matches_reference(in, part, group, 2, path, {}, sevens.data()))
                << "context " << shape.prefill_context << " layer " << layer
                << " part " << row_part_name(part) << " path " << static_cast<int>(path) << " group " << group;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dsv4::opt

namespace dsv4::opt {
namespace {

using namespace dsv4::kernels;

// A step that skipped validation with a token_to_req entry past R: that row is written -1 in
// every column with length 0 and counts one error; no table row is read for it.
TEST(RowLogicAsGpuGroups, ARowWhoseRequestIsOutOfRangeIsMinusOneAndCountsOneError) {
  const ref::BuilderInputs in = harness::tiny_c4a();
  harness::StagedRequest staged(Backend::kHost, in);
  const std::vector<int32_t> token_to_req{0, 1, 7};  // token 2: request 7 of 2
  BuildRequest request = staged.request();
  request.token_to_req = token_to_req.data();
  std::vector<int32_t> indices(3 * 8, 0x5a5a5a5a), lens(3, 0x5a5a5a5a);
  const MixedSparseIndicesArgs a =
      make_mixed_sparse_indices_args(request, BuiltIndices{indices.data(), lens.data(), 3, 8, 8}, nullptr);
  for (int32_t group : {1, 8}) {
    const int64_t errors = build_as_groups(a, group, 2);
    EXPECT_EQ(errors, 1) << "group " << group;
    EXPECT_EQ(lens[2], 0);
    for (int32_t c = 0; c < 8; ++c) EXPECT_EQ(indices[static_cast<size_t>(2 * 8 + c)], -1) << "column " << c;
    const ref::BuilderOutput want = ref::build_mixed_sparse_indices(in);  // rows 0 and 1 as valid
    for (int32_t c = 0; c < 8; ++c) EXPECT_EQ(indices[static_cast<size_t>(8 + c)], want.sparse_indices(1, c));
  }
}

// Block sizes and divisors are validated before; below 1 they are taken as 1, never divided by.
TEST(FastDivider, DivisorsBelowOneAreOne) {
  EXPECT_EQ(FastDivider::make(0).divide(77), 77u);
  EXPECT_EQ(FastDivider::make(-3).divide(5), 5u);
  EXPECT_EQ(BlockTableView::make(nullptr, 0, 0, 0).block_size, 1);
}

}  // namespace
}  // namespace dsv4::opt
