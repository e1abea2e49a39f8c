// The CUDA backend against the reference, element for element (indices, lens, content-error
// counts): hand cases, corrupted inputs, seeded random builds on every kernel variant (every
// launch shape, vector or scalar path, power-of-two or general block sizes, global or local
// decode form). Every output element must be
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

using namespace dsv4::kernels;  // the kernels' row logic and launch policy under test

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

// Rows wider than a CTA's one pass: each of its 256 threads handles several passes.
TEST_F(CudaBuilderTest, WideRowsTakeACtaPerRow) {
  testing::RandomShape wide;
  wide.max_topk = 3000;
  wide.max_requests = 4;
  wide.max_prefill_query = 40;
  wide.max_context = 20000;
  random_builds(4000, 16, wide, {});
  random_builds(4100, 8, wide, {0, 1});
}

// Every compiled launch shape (threads per row x chunks per pass), forced, on steps with many
// rows (several rows per CTA, partial last CTA), wide rows (several passes) and small ones;
// random steps mix decode and prefill rows, and some are decode-only or prefill-only (the
// row-kind specialisations).
TEST_F(CudaBuilderTest, EveryLaunchShapeMatchesTheReference) {
  testing::RandomShape many;
  many.max_requests = 40;
  many.max_prefill_query = 40;
  many.max_topk = 600;
  testing::RandomShape wide;
  wide.max_topk = 3000;
  wide.max_requests = 3;
  wide.max_context = 20000;
  int shapes = 0;
  for (int32_t group = MixedSparseIndicesPolicy::kMinGroupThreads; group <= MixedSparseIndicesPolicy::kCtaThreads;
       group *= 2) {
    for (int32_t chunks : MixedSparseIndicesPolicy::kChunkChoices) {
      builder_ = make_cuda_builder(stream_, size_t{1} << 20, LaunchShape{group, chunks});
      const uint64_t base = 7000 + 100 * static_cast<uint64_t>(shapes++);
      for (uint64_t i = 0; i < 12; ++i) {
        std::mt19937_64 rng(base + i);
        const ref::BuilderInputs in = testing::random_builder_inputs(rng, i % 3 == 2 ? wide : many);
        ASSERT_TRUE(testing::build_matches_reference(*builder_, in, i % 4 == 3 ? testing::StagingOptions{1, 0}
                                                                               : testing::StagingOptions{}))
            << "shape " << group << "x" << chunks << " seed " << base + i << ": " << testing::describe(in);
      }
    }
  }
  EXPECT_EQ(shapes, 6);
}

// Decode-only steps take the decode-chunk kernel (a CTA per row, a thread per 16-byte chunk)
// when their rows fit a CTA, the group kernel otherwise; forced or by the policy.
TEST_F(CudaBuilderTest, DecodeOnlyStepsMatchTheReference) {
  testing::RandomShape decodes;
  decodes.decode_only = true;
  decodes.max_requests = 40;
  decodes.max_topk = 600;
  testing::RandomShape wide = decodes;  // rows up to 5128 columns: past one CTA's 1024 chunks
  wide.max_requests = 4;
  wide.max_topk = 5000;
  for (const bool forced : {false, true}) {
    if (forced) builder_ = make_cuda_builder(stream_, size_t{1} << 20, LaunchShape{0, 0, true});
    const uint64_t base = forced ? 9000 : 8000;
    random_builds(base, 80, decodes, {});
    random_builds(base + 100, 30, decodes, {1, 0});
    random_builds(base + 200, 20, decodes, {3, 1});  // scalar path
    random_builds(base + 300, 20, wide, {});
    random_builds(base + 400, 30, {}, {});  // mixed steps: the decode-chunk kernel does not apply
  }
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
