// No stale step: one engine loop (one builder, a new StepIndexer per step, end_step between)
// over consecutive different steps never returns an earlier step's indices, in any SPEC §8
// mode, and a StepIndexer used after end_step throws instead of answering from its dead cache.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <numeric>
#include <random>

#include "harness/backend_step.h"
#include "harness/compare_build.h"
#include "harness/index_sources.h"
#include "harness/sharing_check.h"
#include "optimized/step_indexer.h"
#include "property_util.h"
#include "support/backend_test.h"

namespace dsv4::harness {
namespace {

using testing::small_steps;

// The same step shape with every physical block renamed: same cache keys, other slots. A
// cache or builder that outlives its step answers this one with the previous step's slots.
ref::Step renamed_blocks(const ref::Step& s, uint64_t seed) {
  ref::Step out = s;
  for (ref::PagedCache* c : {&out.swa, &out.c4a, &out.c128a}) {
    const int32_t max_id = c->block_table.size() ? std::max(c->block_table.maxCoeff(), 0) : 0;
    std::vector<int32_t> rename(static_cast<size_t>(max_id) + 1);
    std::iota(rename.begin(), rename.end(), 0);
    std::shuffle(rename.begin(), rename.end(), std::mt19937_64(seed));
    for (Eigen::Index i = 0; i < c->block_table.size(); ++i) {
      int32_t& v = c->block_table.data()[i];
      if (v >= 0) v = rename[static_cast<size_t>(v)] + 1;  // + 1: block 0 moves too
    }
  }
  return out;
}

using NoStaleStep = testing::BackendTest;
DSV4_ON_EVERY_BACKEND(NoStaleStep);

// One engine loop on `builder`: steps of one schedule, each compared against ITS reference.
void engine_loop_is_never_stale(opt::MixedSparseIndicesBuilder& builder) {
  const ref::ModelSchedule schedule = *gen_schedule(ScheduleChoice::kAny);
  const int steps = *rc::gen::inRange(2, 6);
  const opt::Backend backend = builder.backend();
  ref::Step previous;
  for (int i = 0; i < steps; ++i) {
    const bool same_shape = i > 0 && *rc::gen::arbitrary<bool>();
    const ref::Step step = same_shape ? renamed_blocks(previous, *rc::gen::arbitrary<uint64_t>())
                                      : *gen_step(small_steps());
    const auto c4a = *gen_c4a_outputs(step, schedule);
    const std::vector<ref::BuilderOutput> want = ref::run_step_uncached(step, schedule, c4a);
    const BackendStep staged(backend, step, schedule, c4a);
    for (const bool cached : {false, true}) {
      opt::CacheOptions options;
      options.enabled = cached;
      opt::StepIndexer indexer(builder, staged.inputs(), options);
      std::vector<opt::BuiltIndices> built;
      for (int32_t l = 0; l < schedule.num_layers(); ++l)
        built.push_back(indexer.layer_indices(schedule.compress_ratios[static_cast<size_t>(l)], staged.c4a(l)));
      for (int32_t l = 0; l < schedule.num_layers(); ++l) {  // compared against THIS step
        const ref::BuilderOutput& w = want[static_cast<size_t>(l)];
        for (const Mismatch& m : compare_build(w, download(backend, built[static_cast<size_t>(l)]), w.content_errors,
                                               step.num_decode_tokens, Mismatch{}))
          RC_FAIL("step " + std::to_string(i) + " layer " + std::to_string(l) + ": " + format_mismatch(m));
      }
      indexer.end_step();
      RC_ASSERT(indexer.cache().ended());
      if (schedule.num_layers() > 0) {
        RC_ASSERT_THROWS_AS(indexer.layer_indices(schedule.compress_ratios[0], staged.c4a(0)), std::logic_error);
      }
    }
    previous = step;
  }
}

TEST_P(NoStaleStep, AnEngineLoopNeverReturnsAnEarlierStepsIndices) {
  testing::check_property([this] { engine_loop_is_never_stale(builder()); });
}

// The same loop through the SPEC §8 modes (a random mode, lazily or in one launch, each step),
// the C4A layers with random index sources: each step's outputs, segments, tail-only buffers and
// call counts are its own (sharing_check.h compares them with THIS step's reference).
void engine_loop_is_never_stale_in_any_mode(opt::MixedSparseIndicesBuilder& inner) {
  const ref::ModelSchedule schedule = *gen_schedule(ScheduleChoice::kAny);
  const int steps = *rc::gen::inRange(2, 5);
  const opt::Backend backend = inner.backend();
  CountingBuilder builder(inner);
  StepCase c;
  c.schedule = schedule;
  for (int i = 0; i < steps; ++i) {
    const bool same_shape = i > 0 && *rc::gen::arbitrary<bool>();
    c.step = same_shape ? renamed_blocks(c.step, *rc::gen::arbitrary<uint64_t>()) : *gen_step(small_steps());
    c.c4a_per_layer = *gen_c4a_outputs(c.step, schedule);
    c.layout = StepLayout{};
    c = *gen_index_sources(c);
    const std::vector<ref::BuilderOutput> want = reference_outputs(c);
    const BackendStep staged(backend, c.step, schedule, c.c4a_per_layer, c.layout);
    // One mode a step (the sanitizer job's time): the loop still changes modes between steps.
    const auto mode = *rc::gen::element(opt::SharingMode::kSeed, opt::SharingMode::kSplit, opt::SharingMode::kTailOnly);
    const bool one_launch = *rc::gen::arbitrary<bool>();
    check_sharing_path(mode, one_launch, c, want, window_content_errors(c), staged, builder, [&](const Mismatch& m) {
      RC_FAIL("step " + std::to_string(i) + ": " + format_mismatch(m));
    });
  }
}

TEST_P(NoStaleStep, AnEngineLoopNeverReturnsAnEarlierStepsIndicesInAnyMode) {
  testing::check_property([this] { engine_loop_is_never_stale_in_any_mode(builder()); });
}

TEST(RenamedBlocks, KeepTheShapeAndChangeTheSlots) {
  const StepCase c = draw(gen_step_case(ScheduleChoice::kFlash, small_steps()), 11, 80);
  ASSERT_GT(c.step.num_tokens(), 0);
  const ref::Step r = renamed_blocks(c.step, 5);
  EXPECT_EQ(r.swa.block_table.cols(), c.step.swa.block_table.cols());
  EXPECT_NE(r.swa.block_table, c.step.swa.block_table);
  const auto a = ref::run_step_uncached(c.step, c.schedule, c.c4a_per_layer);
  const auto b = ref::run_step_uncached(r, c.schedule, c.c4a_per_layer);
  EXPECT_NE(a[0].sparse_indices, b[0].sparse_indices);
}

}  // namespace
}  // namespace dsv4::harness
