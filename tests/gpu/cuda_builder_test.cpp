// The CUDA backend against the reference, element for element (indices, lens, content-error
// counts): hand cases, corrupted inputs, seeded random builds on every kernel variant (warp or
// CTA per row, vector or scalar path, global or local decode form). Every output element must be
// written: the output memory is poisoned and rebuilt in place. Skips visibly without a device.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#if defined(DSV4_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "kernels/mixed_sparse_indices_policy.h"
#include "optimized/cuda_builder.h"
#include "tests/optimized/optimized_test_support.h"

namespace dsv4::opt {
namespace {

// A CUDA builder on a non-blocking stream (so that nothing relies on legacy-stream ordering).
class CudaBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
#if defined(DSV4_WITH_CUDA)
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    stream_ = stream;
    ASSERT_EQ(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
#endif
    builder_ = make_cuda_builder(stream_);
  }
  void TearDown() override {
    builder_.reset();
#if defined(DSV4_WITH_CUDA)
    if (stream_ != nullptr) {
      EXPECT_EQ(cudaStreamDestroy(static_cast<cudaStream_t>(stream_)), cudaSuccess);
    }
#endif
  }

  void random_builds(uint64_t seed_base, int cases, const testing::RandomShape& shape,
                     testing::StagingOptions options) {
    for (int i = 0; i < cases; ++i) {
      const uint64_t seed = seed_base + static_cast<uint64_t>(i);
      std::mt19937_64 rng(seed);
      const ref::BuilderInputs in = testing::random_builder_inputs(rng, shape);
      ASSERT_TRUE(testing::build_matches_reference(*builder_, in, options))
          << "seed " << seed << ": " << testing::describe(in);
    }
  }

  void* stream_ = nullptr;
  int sm_count_ = 0;
  std::unique_ptr<MixedSparseIndicesBuilder> builder_;
};

TEST_F(CudaBuilderTest, HandCasesAndCorruptedInputsMatchTheReference) {
  EXPECT_EQ(builder_->backend(), Backend::kCuda);
  EXPECT_STREQ(backend_name(builder_->backend()), "cuda");
  for (const testing::NamedCase& c : testing::hand_cases()) {
    EXPECT_TRUE(testing::build_matches_reference(*builder_, c.inputs)) << c.name;
  }
}

TEST_F(CudaBuilderTest, RandomBuildsDenseAligned) { random_builds(1000, 150, {}, {}); }
TEST_F(CudaBuilderTest, RandomBuildsPaddedRowStrides) { random_builds(2000, 60, {}, {1, 0}); }
TEST_F(CudaBuilderTest, RandomBuildsMisaligned) { random_builds(3000, 60, {}, {3, 1}); }

// Rows wider than 2048 columns: a CTA per row, each of its 256 threads owning several chunks.
TEST_F(CudaBuilderTest, WideRowsTakeACtaPerRow) {
  testing::RandomShape wide;
  wide.max_topk = 3000;
  wide.max_requests = 4;
  wide.max_prefill_query = 40;
  wide.max_context = 20000;
  random_builds(4000, 16, wide, {});
  random_builds(4100, 8, wide, {0, 1});
}

// More rows than 2 per SM: half a warp per narrow row (<= 256 columns), a warp per wider row,
// grid-stride beyond the grid cap. Both mappings must be exercised.
TEST_F(CudaBuilderTest, ManyRowsTakeAHalfWarpOrAWarpPerRow) {
  testing::RandomShape many;
  many.max_requests = 200;
  many.max_decode_query = 3;
  many.max_prefill_query = 40;
  many.max_topk = 600;
  int built[kRowMappings] = {};
  for (uint64_t seed = 5000; seed < 5064 && (built[0] < 4 || built[1] < 4); ++seed) {
    std::mt19937_64 rng(seed);
    ref::BuilderInputs in = testing::random_builder_inputs(rng, many);
    const auto rows = static_cast<int32_t>(in.token_to_req.size());
    if (rows <= 2 * sm_count_) continue;  // the CTA mapping is covered elsewhere
    const ref::BuilderOutput expected = ref::build_mixed_sparse_indices(in);
    const auto width = static_cast<int32_t>(expected.sparse_indices.cols());
    const int32_t chunks = in.window % 4 == 0 ? width / 4 : width;
    const RowMapping mapping = choose_row_mapping(rows, chunks, sm_count_);
    if (mapping == RowMapping::kCtaPerRow) continue;  // wide scalar rows: covered elsewhere
    ASSERT_TRUE(testing::build_matches_reference(*builder_, in)) << "seed " << seed << ": "
                                                                 << testing::describe(in);
    ++built[static_cast<int>(mapping)];
  }
  EXPECT_GT(built[static_cast<int>(RowMapping::kHalfWarpPerRow)], 0) << "no step took half warps";
  EXPECT_GT(built[static_cast<int>(RowMapping::kWarpPerRow)], 0) << "no step took whole warps";
}

TEST_F(CudaBuilderTest, ErrorsAccumulateUntilTakenThenReset) {
  testing::StagedRequest staged(Backend::kCuda, testing::prefill_swa_negative_table_entry());
  builder_->build(staged.request());
  builder_->build(staged.request());
  EXPECT_EQ(builder_->take_content_errors(), 16);
  EXPECT_EQ(builder_->take_content_errors(), 0);
  builder_->release_outputs();
}

TEST_F(CudaBuilderTest, EmptyStepLaunchesNothing) {
  ref::BuilderInputs in;
  in.window = 4;
  in.ratio = 4;
  in.topk = 5;
  in.decode_swa_indices = ref::IndexMatrix(0, 4);
  in.prefill_topk = ref::IndexMatrix(0, 5);
  in.query_start_loc = testing::vec({0});
  in.token_to_req = ref::IndexVector(0);
  in.seq_lens = ref::IndexVector(0);
  in.swa = ref::PagedCache{ref::IndexMatrix(0, 0), 64};
  testing::StagedRequest staged(Backend::kCuda, in);
  const BuiltIndices built = builder_->build(staged.request());
  EXPECT_EQ(built.num_tokens, 0);
  EXPECT_EQ(built.width, 12);
  EXPECT_EQ(builder_->take_content_errors(), 0);
}

TEST_F(CudaBuilderTest, OutputsAreAlignedDistinctAndRecycledPerStep) {
  testing::StagedRequest staged(Backend::kCuda, testing::tiny_c4a());
  const BuiltIndices a = builder_->build(staged.request());
  const BuiltIndices b = builder_->build(staged.request());
  EXPECT_NE(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.sparse_indices) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.sparse_lens) % 16, 0u);
  builder_->release_outputs();
  EXPECT_EQ(builder_->build(staged.request()).sparse_indices, a.sparse_indices);
  EXPECT_EQ(builder_->take_content_errors(), 0);  // also: the builds are done before staged is freed
  builder_->release_outputs();
}

// The legacy default stream (nullptr) works too, and a workspace that starts tiny grows.
TEST(CudaBuilderStreams, DefaultStreamAndGrowingWorkspace) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  auto builder = make_cuda_builder(nullptr, 256);
  for (const testing::NamedCase& c : testing::hand_cases()) {
    EXPECT_TRUE(testing::build_matches_reference(*builder, c.inputs)) << c.name;
  }
  std::mt19937_64 rng(77);
  testing::RandomShape wide;
  wide.max_topk = 2000;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(testing::build_matches_reference(*builder, testing::random_builder_inputs(rng, wide)));
}

// Without a device the CUDA backend refuses loudly, whether or not this build has CUDA (a
// CUDA build on a machine without a GPU, like CI's, used to skip this test).
TEST(CudaBuilderAbsent, NoDeviceMeansNoBuilder) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW(make_cuda_builder(), std::runtime_error);
  EXPECT_THROW(BackendBuffer(Backend::kCuda, 16), std::runtime_error);
}

}  // namespace
}  // namespace dsv4::opt
