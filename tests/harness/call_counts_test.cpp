// SPEC §5 call counts through the counting decorator: the uncached path builds once per
// layer; the cached path once per cacheable kind present plus once per C4A layer; a hit
// returns the very buffers of its kind's first build; C4A layers always get fresh ones.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "harness/backend_step.h"
#include "harness/counting_builder.h"
#include "optimized/step_indexer.h"
#include "property_util.h"
#include "support/backend_test.h"

namespace dsv4::harness {
namespace {

using testing::small_steps;

using CallCounts = testing::BackendTest;
DSV4_ON_EVERY_BACKEND(CallCounts);

void call_counts_hold(opt::MixedSparseIndicesBuilder& inner) {
  const StepCase c = *gen_step_case(ScheduleChoice::kAny, small_steps());
  const int32_t layers = c.schedule.num_layers();
  const BackendStep staged(inner.backend(), c.step, c.schedule, c.c4a_per_layer, c.layout);
  CountingBuilder builder(inner);

  opt::CacheOptions uncached;
  uncached.enabled = false;
  {
    opt::StepIndexer indexer(builder, staged.inputs(), uncached);
    for (int32_t l = 0; l < layers; ++l)
      indexer.layer_indices(c.schedule.compress_ratios[static_cast<size_t>(l)], staged.c4a(l));
    RC_ASSERT(builder.build_calls() == layers);
    RC_ASSERT(indexer.cache().builder_calls() == layers);
    RC_ASSERT(indexer.cache().hits() == 0);
    indexer.end_step();
  }

  const int64_t before = builder.build_calls();
  opt::StepIndexer indexer(builder, staged.inputs());
  std::vector<opt::BuiltIndices> built;
  for (int32_t l = 0; l < layers; ++l)
    built.push_back(indexer.layer_indices(c.schedule.compress_ratios[static_cast<size_t>(l)], staged.c4a(l)));
  const int64_t expected = expected_builder_calls(c.schedule, true);
  RC_ASSERT(builder.build_calls() - before == expected);
  RC_ASSERT(indexer.cache().builder_calls() == expected);
  RC_ASSERT(indexer.cache().hits() == layers - expected);

  // Identity: every SWA-only layer gets the first SWA-only build's buffers, every C128A layer
  // the first C128A build's; C4A layers get buffers of their own.
  const opt::BuiltIndices* first[3] = {nullptr, nullptr, nullptr};
  std::set<const int32_t*> distinct;
  for (int32_t l = 0; l < layers; ++l) {
    const auto kind = ref::layer_kind_from_ratio(c.schedule.compress_ratios[static_cast<size_t>(l)]);
    const opt::BuiltIndices& b = built[static_cast<size_t>(l)];
    if (kind == ref::LayerKind::kC4A) {
      if (c.step.num_tokens() > 0) RC_ASSERT(distinct.insert(b.sparse_indices).second);
      continue;
    }
    const opt::BuiltIndices*& f = first[static_cast<int>(kind)];
    if (f == nullptr) {
      f = &b;
      if (c.step.num_tokens() > 0) RC_ASSERT(distinct.insert(b.sparse_indices).second);
    } else {
      RC_ASSERT(b.sparse_indices == f->sparse_indices);
      RC_ASSERT(b.sparse_lens == f->sparse_lens);
    }
  }
  indexer.end_step();
}

TEST_P(CallCounts, UncachedOncePerLayerCachedOncePerKeyPlusOncePerC4aLayer) {
  testing::check_property([this] { call_counts_hold(builder()); });
}

// SPEC §1's table: Flash 43 -> 23, Pro 61 -> 31 (the one place these numbers are written).
TEST(ExpectedCallCounts, RealSchedules) {
  EXPECT_EQ(expected_builder_calls(ref::deepseek_v4_flash(), true), 23);
  EXPECT_EQ(expected_builder_calls(ref::deepseek_v4_pro(), true), 31);
  EXPECT_EQ(expected_builder_calls(ref::deepseek_v4_flash(), false), 43);
  EXPECT_EQ(expected_builder_calls(ref::deepseek_v4_pro(), false), 61);
  ref::ModelSchedule s;
  s.compress_ratios = {0, 1, 0, 128, 4, 4};  // ratios 0 and 1 are one kind
  EXPECT_EQ(expected_builder_calls(s, true), 4);
  s.compress_ratios = {};
  EXPECT_EQ(expected_builder_calls(s, true), 0);
  s.compress_ratios = {2};
  EXPECT_THROW(expected_builder_calls(s, true), std::invalid_argument);
}

TEST(ExpectedCallCounts, CountingBuilderForwardsAndCounts) {
  auto inner = opt::make_host_builder();
  CountingBuilder builder(*inner);
  EXPECT_EQ(builder.backend(), opt::Backend::kHost);
  EXPECT_EQ(builder.build_calls(), 0);
  builder.release_outputs();
  EXPECT_EQ(builder.releases(), 1);
}

}  // namespace
}  // namespace dsv4::harness
