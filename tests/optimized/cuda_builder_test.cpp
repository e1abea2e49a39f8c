// What only the CUDA backend has: forced launch shapes (the group kernel's, the decode-chunk
// kernel, the one-launch kernel of SPEC §8), programmatic launch and the gathered-lookups kernel on and off, the legacy default stream, a workspace that grows,
// refusal without a device. (Everything both backends do is in builder_test.cpp.)
// Suites start with "Cuda": CTest labels them `gpu`.
#include <gtest/gtest.h>

#include "bench/bench_cases.h"
#include "harness/generators.h"
#include "harness/hand_cases.h"
#include "harness/step_factory.h"
#include "kernels/mixed_sparse_indices_policy.h"
#include "kernels/multi_build.h"
#include "optimized/kernel_args.h"
#include "optimized/backend_buffer.h"
#include "optimized/device_memory.h"
#include "support/backend_test.h"
#include "support/expectations.h"

namespace dsv4::testing {
namespace {

using kernels::MixedSparseIndicesPolicy;

// A differential check of the CUDA backend alone, its builders made with `cuda`.
harness::DifferentialOptions cuda_builds(const opt::CudaBuilderOptions& cuda) {
  harness::DifferentialOptions options;
  options.backends = {opt::Backend::kCuda};
  options.make_builder = [cuda](opt::Backend) { return opt::make_cuda_builder(nullptr, cuda); };
  return options;
}

// Every compiled launch shape (threads per row x chunks per pass), forced, on steps with many
// rows (several rows per CTA, partial last CTA), wide rows (several passes) and small ones;
// random steps mix decode and prefill rows, and some are decode-only or prefill-only (the
// row-kind specialisations).
TEST(CudaBuilder, EveryLaunchShapeMatchesTheReference) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  harness::BuildLimits many;
  many.max_requests = 40;
  many.max_prefill_query = 40;
  many.max_topk = 600;
  harness::BuildLimits wide;
  wide.max_topk = 3000;
  wide.max_requests = 3;
  wide.max_context = 20000;
  int shapes = 0;
  for (int32_t group = MixedSparseIndicesPolicy::kMinGroupThreads; group <= MixedSparseIndicesPolicy::kCtaThreads;
       group *= 2) {
    for (int32_t chunks : MixedSparseIndicesPolicy::kChunkChoices) {
      auto builder = opt::make_cuda_builder(nullptr, size_t{1} << 20, kernels::LaunchShape{group, chunks});
      const uint64_t base = 7000 + 100 * static_cast<uint64_t>(shapes++);
      for (uint64_t seed = base; seed < base + 12; ++seed) {
        const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(seed % 3 == 2 ? wide : many), seed);
        ASSERT_TRUE(builds_like_reference(*builder, in, harness::draw(harness::gen_request_layout(), seed)))
            << "shape " << group << "x" << chunks << " seed " << seed << ": " << harness::describe(in);
      }
    }
  }
  EXPECT_EQ(shapes, 6);
}

// The gathered-lookups kernel on and off (CudaBuilderOptions::gathered_lookups): random
// prefill-only builds in every compiled group size (the gathered kernel where the group is wider
// than 8 and the kind not C4A), and the production build it is for, Flash's C128A layer of an
// 8K prefill after 120K of context (groups of 64), equal the reference either way.
TEST(CudaBuilder, GatheredLookupsOnAndOffMatchTheReference) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  harness::BuildLimits prefills;
  prefills.prefill_only = true;
  prefills.max_requests = 4;
  prefills.max_prefill_query = 40;
  prefills.max_context = 20000;
  prefills.max_topk = 3000;
  harness::StepCase long_context;
  long_context.step = harness::make_step(bench::bench_case("prefill8K_ctx120K").shape);
  long_context.schedule = ref::deepseek_v4_flash();
  long_context.schedule.compress_ratios.resize(3);  // SWA-only, C4A, C128A
  long_context.c4a_per_layer = harness::make_c4a_indexer_outputs(long_context.step, long_context.schedule, 8);
  for (bool gathered : {true, false}) {
    for (int32_t group = MixedSparseIndicesPolicy::kMinGroupThreads; group <= MixedSparseIndicesPolicy::kCtaThreads;
         group *= 2) {
      opt::CudaBuilderOptions cuda;
      cuda.workspace_bytes = size_t{1} << 20;
      cuda.forced_shape = kernels::LaunchShape{group, MixedSparseIndicesPolicy::kDefaultChunks};
      cuda.gathered_lookups = gathered;
      auto builder = opt::make_cuda_builder(nullptr, cuda);
      for (uint64_t seed = 58000; seed < 58012; ++seed) {
        const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(prefills), seed);
        ASSERT_TRUE(builds_like_reference(*builder, in, harness::draw(harness::gen_request_layout(), seed)))
            << "gathered " << gathered << " group " << group << " seed " << seed << ": " << harness::describe(in);
      }
    }
    opt::CudaBuilderOptions cuda;
    cuda.gathered_lookups = gathered;
    EXPECT_TRUE(agrees(harness::differential_check(long_context, cuda_builds(cuda)))) << "gathered " << gathered;
  }
}

// The decode-chunk kernel forced on decode-only steps (and its rows past one CTA, and mixed
// steps, where it does not apply and the group kernel runs).
TEST(CudaBuilder, ForcedDecodeChunkKernelMatchesTheReference) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  auto builder = opt::make_cuda_builder(nullptr, size_t{1} << 20, kernels::LaunchShape{0, 0, true});
  harness::BuildLimits decodes;
  decodes.decode_only = true;
  decodes.max_requests = 40;
  decodes.max_topk = 600;
  harness::BuildLimits wide = decodes;
  wide.max_requests = 4;
  wide.max_topk = 5000;
  for (uint64_t seed = 9000; seed < 9200; ++seed) {
    const harness::BuildLimits& limits = seed % 10 == 9 ? harness::BuildLimits{} : seed % 10 == 8 ? wide : decodes;
    const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(limits), seed);
    ASSERT_TRUE(builds_like_reference(*builder, in, harness::draw(harness::gen_request_layout(), seed)))
        << "seed " << seed << ": " << harness::describe(in);
  }
}

// Programmatic dependent launch on and off: every build of a step may begin while the one
// before it finishes (each waits for its predecessor before reading), or launches plainly
// (as kernel_bench times single builds); every layer equals the reference either way.
TEST(CudaStep, ProgrammaticLaunchOnAndOffMatchTheReference) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  harness::StepCase decodes;
  decodes.step = harness::make_step(bench::bench_case("decode256_ctx32K").shape);
  harness::StepCase mixed;
  mixed.step = harness::make_step(bench::bench_case("decode32_prefill8K").shape);
  for (bool programmatic : {true, false}) {
    opt::CudaBuilderOptions cuda;
    cuda.programmatic_launch = programmatic;
    const harness::DifferentialOptions options = cuda_builds(cuda);
    for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
      decodes.schedule = schedule;
      decodes.c4a_per_layer = harness::make_c4a_indexer_outputs(decodes.step, schedule, 6);
      EXPECT_TRUE(agrees(harness::differential_check(decodes, options))) << schedule.name << " " << programmatic;
    }
    mixed.schedule = ref::deepseek_v4_flash();
    mixed.schedule.compress_ratios.resize(6);  // every kind and the cache hits of each
    mixed.c4a_per_layer = harness::make_c4a_indexer_outputs(mixed.step, mixed.schedule, 7);
    EXPECT_TRUE(agrees(harness::differential_check(mixed, options))) << "programmatic " << programmatic;
  }
}

// SPEC §8 one launch, every compiled group size forced: a step's SWA segment, a compressed
// segment and a whole build in one launch equal the reference's (and the launch is the one
// multi-build kernel whenever the builds can share it).
TEST(CudaBuilder, OneLaunchOfEveryShapeMatchesTheReference) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  harness::BuildLimits many;
  many.max_requests = 30;
  many.max_prefill_query = 30;
  many.max_topk = 600;
  // Drawn builds share the kernel only with 16-byte rows, power-of-two blocks and one row kind
  // (about 1 in 10): each group's draws go on until kShared of them did (the others check the
  // fallback of a launch each).
  constexpr int kShared = 12, kMaxDraws = 400;
  for (int32_t group = MixedSparseIndicesPolicy::kMinGroupThreads; group <= MixedSparseIndicesPolicy::kCtaThreads;
       group *= 2) {
    auto builder = opt::make_cuda_builder(nullptr, size_t{1} << 20, kernels::LaunchShape{group, 2});
    int together = 0;
    const uint64_t first_seed = 24000 + 1000 * static_cast<uint64_t>(group);
    for (uint64_t seed = first_seed; together < kShared && seed < first_seed + kMaxDraws; ++seed) {
      const ref::BuilderInputs in = harness::draw(harness::gen_builder_inputs(many), seed);
      const ref::BuilderInputs segment_inputs = ref::window_segment_inputs(in);
      harness::StagedRequest staged(opt::Backend::kCuda, in), segment(opt::Backend::kCuda, segment_inputs);
      opt::BuildRequest requests[3] = {segment.request(), staged.request(), staged.request()};
      requests[0].part = opt::RowPart::kWindow;
      requests[1].part = opt::RowPart::kCompressed;
      const ref::BuilderOutput want[3] = {reference_part(segment_inputs, opt::RowPart::kWhole),
                                          reference_part(in, opt::RowPart::kCompressed),
                                          reference_part(in, opt::RowPart::kWhole)};
      builder->release_outputs();
      (void)builder->take_content_errors();
      opt::BuiltIndices built[3];
      builder->build_together(requests, 3, built);
      const int64_t errors = builder->take_content_errors();
      EXPECT_EQ(errors, want[0].content_errors + want[1].content_errors + want[2].content_errors) << seed;
      kernels::MixedSparseIndicesArgs args[3];
      for (int i = 0; i < 3; ++i) args[i] = opt::make_mixed_sparse_indices_args(requests[i], built[i], nullptr);
      together += kernels::can_build_together(args, 3) ? 1 : 0;
      for (int i = 0; i < 3; ++i) {
        harness::HostIndices got = harness::download(opt::Backend::kCuda, built[i]);
        if (i == 0) got.sparse_lens = want[0].sparse_lens;  // a window build writes no lengths
        harness::Mismatch where;
        where.backend = "cuda";
        where.path = "one launch, group " + std::to_string(group) + ", build " + std::to_string(i);
        where.window = i == 1 ? 0 : in.window;
        ASSERT_TRUE(no_mismatch(harness::compare_build(want[i], got, want[i].content_errors,
                                                       static_cast<int32_t>(in.decode_swa_indices.rows()), where)))
            << "seed " << seed << ": " << harness::describe(in);
      }
    }
    EXPECT_EQ(together, kShared) << "group " << group << ": the one-launch kernel ran for too few of the builds";
  }
}

// Whole steps in every SPEC §8 mode, with the cacheable builds in one launch, on the benchmark's
// shapes (decode-only, mixed, and prefill-only: the prefill-rows kernel on Flash's and Pro's
// C4A rows of 160 and 288 chunks, whole and as SPEC §8 parts), with programmatic launch on and off.
TEST(CudaStep, EverySharingModeMatchesTheReference) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  for (bool programmatic : {true, false}) {
    opt::CudaBuilderOptions cuda;
    cuda.programmatic_launch = programmatic;
    harness::DifferentialOptions options = cuda_builds(cuda);
    options.modes = {opt::SharingMode::kSeed, opt::SharingMode::kSplit, opt::SharingMode::kTailOnly};
    options.one_launch = true;
    for (const char* name : {"decode256_ctx32K", "decode32_prefill8K", "prefill1K"}) {
      harness::StepCase c;
      c.step = harness::make_step(bench::bench_case(name).shape);
      for (ref::ModelSchedule schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
        schedule.compress_ratios.resize(8);  // every kind, hits of each, the C4A tail buffer reused
        c.schedule = schedule;
        c.c4a_per_layer = harness::make_c4a_indexer_outputs(c.step, schedule, 6);
        EXPECT_TRUE(agrees(harness::differential_check(c, options))) << name << " " << schedule.name << " " << programmatic;
      }
    }
  }
}

// A launch of both row kinds builds its CTAs without decode rows with the prefill-only code
// (kernels' build_cta): the decode rows end one row before, at and one row past a CTA's rows,
// and past two CTAs, for every compiled group size (forced), whole steps in every SPEC §8 mode.
TEST(CudaStep, DecodeRowsEndingAroundACtaBoundaryMatchTheReference) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  for (int32_t group = MixedSparseIndicesPolicy::kMinGroupThreads; group <= MixedSparseIndicesPolicy::kCtaThreads;
       group *= 2) {
    opt::CudaBuilderOptions cuda;
    cuda.workspace_bytes = size_t{1} << 20;
    cuda.forced_shape = kernels::LaunchShape{group, MixedSparseIndicesPolicy::kDefaultChunks};
    harness::DifferentialOptions options = cuda_builds(cuda);
    options.modes = {opt::SharingMode::kSeed, opt::SharingMode::kSplit, opt::SharingMode::kTailOnly};
    const int32_t rows_per_cta = MixedSparseIndicesPolicy::kCtaThreads / group;
    for (int32_t decodes : {rows_per_cta - 1, rows_per_cta, rows_per_cta + 1, 2 * rows_per_cta + 1}) {
      if (decodes < 1) continue;
      harness::StepShape shape;
      shape.num_decodes = decodes;
      shape.decode_context = 3000;
      shape.num_prefills = 2;
      shape.prefill_tokens_each = 3 * rows_per_cta + 5;  // several prefill CTAs, the last one partial
      shape.prefill_context = 2500;
      shape.seed = static_cast<uint64_t>(100 * group + decodes);
      harness::StepCase c;
      c.step = harness::make_step(shape);
      c.schedule = ref::deepseek_v4_flash();
      c.schedule.compress_ratios.resize(8);  // every kind, hits of each
      c.c4a_per_layer = harness::make_c4a_indexer_outputs(c.step, c.schedule, shape.seed);
      EXPECT_TRUE(agrees(harness::differential_check(c, options))) << "group " << group << ", " << decodes << " decodes";
    }
  }
}

// The legacy default stream (nullptr) works too, and a workspace that starts tiny grows.
TEST(CudaBuilder, DefaultStreamAndGrowingWorkspace) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  auto builder = opt::make_cuda_builder(nullptr, 256);
  for (const harness::HandCase& c : harness::hand_cases()) EXPECT_TRUE(builds_as(*builder, c.inputs, c.expected)) << c.name;
  harness::BuildLimits wide;
  wide.max_topk = 2000;
  for (uint64_t seed = 77; seed < 82; ++seed)
    EXPECT_TRUE(builds_like_reference(*builder, harness::draw(harness::gen_builder_inputs(wide), seed))) << seed;
}

// Without a device the CUDA backend refuses loudly, whether or not this build has CUDA (a
// CUDA build on a machine without a GPU, like CI's, used to skip this test).
TEST(CudaBuilderAbsent, NoDeviceMeansNoBuilder) {
  if (opt::cuda_device_present()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW(opt::make_cuda_builder(), std::runtime_error);
  EXPECT_THROW(opt::make_cuda_builder(nullptr, 1024), std::runtime_error);
  EXPECT_THROW(opt::make_cuda_builder(nullptr, 1024, kernels::LaunchShape{}), std::runtime_error);
  EXPECT_THROW(opt::make_cuda_builder(nullptr, opt::CudaBuilderOptions{}), std::runtime_error);
  EXPECT_THROW(opt::BackendBuffer(opt::Backend::kCuda, 16), std::runtime_error);
  int32_t value = 0;
  EXPECT_THROW(opt::copy_to_host(opt::Backend::kCuda, &value, &value, sizeof value), std::runtime_error);
  EXPECT_THROW(opt::device_allocate(16), std::runtime_error);
  EXPECT_THROW(opt::device_copy_from_host(&value, &value, sizeof value), std::runtime_error);
  EXPECT_THROW(opt::device_copy_to_host(&value, &value, sizeof value), std::runtime_error);
  EXPECT_NO_THROW(opt::device_release(nullptr));
}

}  // namespace
}  // namespace dsv4::testing
