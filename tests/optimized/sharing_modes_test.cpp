// StepIndexer's SPEC §8 modes by hand, on every backend: each mode has its own layer call and
// refuses the others'; a split step shares one SWA segment; a tail-only C4A output is valid
// until the next C4A build of its shape and refused (not garbage) after; the cacheable builds
// in one launch (one builder call); C4A layers that name one index source share a build in
// every mode. (The properties over random steps: tests/harness/sharing_modes_test.cpp.)
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "harness/backend_step.h"
#include "harness/counting_builder.h"
#include "harness/index_sources.h"
#include "harness/step_factory.h"
#include "optimized/step_indexer.h"
#include "support/assertions.h"
#include "support/backend_test.h"
#include "support/expectations.h"
#include "support/step_shapes.h"

namespace dsv4::testing {
namespace {

using opt::SharingMode;
using opt::StepIndexer;

constexpr int32_t kSwaOnlyLayer = 0, kFirstC4a = 2, kFirstC128a = 3, kSecondC4a = 4;

template <class Call>
::testing::AssertionResult logic_error_naming(Call&& call, const std::string& needle) {
  try {
    call();
  } catch (const std::logic_error& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message \"" << e.what() << "\" does not name \"" << needle << "\"";
  }
  return ::testing::AssertionFailure() << "no std::logic_error";
}

// A small Flash step (decodes and prefills) staged on the test's backend, counted.
class SharingModesTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    case_.schedule = ref::deepseek_v4_flash();
    case_.step = harness::make_step(small_mixed_shape());
    case_.c4a_per_layer = harness::make_c4a_indexer_outputs(case_.step, case_.schedule, 3);
    stage(case_);
  }
  void TearDown() override {
    staged_.reset();
    counted_.reset();
    BackendTest::TearDown();
  }
  void stage(const harness::StepCase& c) {
    case_ = c;
    staged_ = std::make_unique<harness::BackendStep>(backend(), c.step, c.schedule, c.c4a_per_layer, c.layout);
    counted_ = std::make_unique<harness::CountingBuilder>(builder());
  }
  StepIndexer indexer(SharingMode mode, opt::CacheOptions options = {}) {
    return StepIndexer(*counted_, staged_->inputs(), options, mode);
  }
  int32_t ratio(int32_t layer) const { return case_.schedule.compress_ratios[static_cast<size_t>(layer)]; }
  const opt::C4aLayerInputs* c4a(int32_t layer) const { return staged_->c4a(layer); }
  // The reference's output of `layer`, and the build's on the host.
  ref::BuilderOutput want(int32_t layer) const { return harness::reference_outputs(case_)[static_cast<size_t>(layer)]; }
  harness::HostIndices got(const opt::BuiltIndices& built) const { return harness::download(backend(), built); }

  harness::StepCase case_;
  std::unique_ptr<harness::BackendStep> staged_;
  std::unique_ptr<harness::CountingBuilder> counted_;
};
DSV4_ON_EVERY_BACKEND(SharingModesTest);

TEST_P(SharingModesTest, EachModeHasItsOwnLayerCall) {
  StepIndexer seed = indexer(SharingMode::kSeed);
  EXPECT_TRUE(logic_error_naming([&] { seed.layer_split_indices(1); }, "split"));
  EXPECT_TRUE(logic_error_naming([&] { seed.layer_tail_indices(1); }, "this step is in seed mode"));
  StepIndexer split = indexer(SharingMode::kSplit);
  EXPECT_TRUE(logic_error_naming([&] { split.layer_indices(1); }, "this step is in split mode"));
  EXPECT_TRUE(logic_error_naming([&] { split.layer_tail_indices(1); }, "tail"));
  StepIndexer tail = indexer(SharingMode::kTailOnly);
  EXPECT_TRUE(logic_error_naming([&] { tail.layer_indices(1); }, "this step is in tail mode"));
  EXPECT_TRUE(logic_error_naming([&] { tail.layer_split_indices(1); }, "this step is in tail mode"));
  EXPECT_EQ(counted_->build_calls(), 0);
  EXPECT_STREQ(opt::sharing_mode_name(SharingMode::kTailOnly), "tail");
}

// Every layer of a split step gets the one SWA segment (T x W, no lengths); a SWA-only layer's
// compressed segment has no columns and lengths 0; C4A layers the cut of their own output.
TEST_P(SharingModesTest, SplitLayersShareOneSwaSegment) {
  StepIndexer split = indexer(SharingMode::kSplit);
  const opt::SplitIndices swa_only = split.layer_split_indices(ratio(kSwaOnlyLayer));
  const opt::SplitIndices c4a_layer = split.layer_split_indices(ratio(kFirstC4a), c4a(kFirstC4a));
  const opt::SplitIndices c128a_layer = split.layer_split_indices(ratio(kFirstC128a));
  EXPECT_EQ(counted_->build_calls(), 4);  // the segment, then each layer's compressed part
  for (const opt::SplitIndices* s : {&c4a_layer, &c128a_layer}) {
    EXPECT_EQ(s->swa.sparse_indices, swa_only.swa.sparse_indices);
    EXPECT_EQ(s->swa.sparse_lens, nullptr);
    EXPECT_EQ(s->swa.width, case_.schedule.window);
  }
  (void)split.content_errors();  // synchronizes
  const ref::SplitOutput want_c4a = ref::split_output(want(kFirstC4a), case_.schedule.window);
  const harness::HostIndices compressed = got(c4a_layer.compressed);
  EXPECT_TRUE(same_matrix(want_c4a.compressed_indices, compressed.sparse_indices));
  EXPECT_TRUE(same_vector(want_c4a.compressed_lens, compressed.sparse_lens));
  EXPECT_TRUE(same_matrix(want_c4a.swa_indices, got(c4a_layer.swa).sparse_indices));
  EXPECT_EQ(swa_only.compressed.width, 0);
  EXPECT_TRUE(same_vector(ref::IndexVector::Zero(case_.step.num_tokens()), got(swa_only.compressed).sparse_lens));
  split.end_step();
}

// verify_on_hit rebuilds the shared SWA segment on every hit and compares its window columns
// (it has no lengths); a segment changed behind the cache's back is named.
TEST_P(SharingModesTest, VerifyOnHitChecksTheSharedSwaSegment) {
  StepIndexer split = indexer(SharingMode::kSplit, opt::CacheOptions{true, true});
  const opt::SplitIndices first = split.layer_split_indices(ratio(kSwaOnlyLayer));
  split.layer_split_indices(ratio(kFirstC4a), c4a(kFirstC4a));  // a hit of the segment, verified
  (void)split.content_errors();
  write_int(backend(), first.swa.sparse_indices + 5, 12345);
  EXPECT_TRUE(logic_error_naming([&] { split.layer_split_indices(ratio(kFirstC128a)); },
                                 "token 0, column 5: cached 12345"));
  split.end_step();
}

// Layer 2's tail-only output is there until layer 4 (the next C4A layer of its shape) builds
// into the same buffer; then asking for it is an error, and after end_step every handle is.
TEST_P(SharingModesTest, ATailOnlyOutputIsValidUntilTheNextC4aBuildOfItsShape) {
  StepIndexer tail = indexer(SharingMode::kTailOnly);
  const opt::TailIndices first = tail.layer_tail_indices(ratio(kFirstC4a), c4a(kFirstC4a));
  const opt::TailIndices c128a_layer = tail.layer_tail_indices(ratio(kFirstC128a));
  ASSERT_TRUE(first.valid());
  (void)tail.content_errors();
  EXPECT_TRUE(same_matrix(want(kFirstC4a).sparse_indices, got(first.get()).sparse_indices));
  const opt::BuiltIndices first_buffer = first.get();
  const opt::TailIndices second = tail.layer_tail_indices(ratio(kSecondC4a), c4a(kSecondC4a));
  EXPECT_EQ(counted_->build_calls(), 3);
  EXPECT_FALSE(first.valid());
  EXPECT_TRUE(logic_error_naming([&] { (void)first.get(); }, "a later C4A build of the step wrote this tail-only buffer"));
  EXPECT_TRUE(c128a_layer.valid());  // not a tail-only buffer: valid until the step ends
  EXPECT_EQ(second.get().sparse_indices, first_buffer.sparse_indices);  // one buffer, SWA columns written once
  (void)tail.content_errors();
  const harness::HostIndices second_got = got(second.get());
  EXPECT_TRUE(same_matrix(want(kSecondC4a).sparse_indices, second_got.sparse_indices));
  EXPECT_TRUE(same_vector(want(kSecondC4a).sparse_lens, second_got.sparse_lens));
  tail.end_step();
  EXPECT_FALSE(second.valid());
  EXPECT_TRUE(logic_error_naming([&] { (void)second.get(); }, "the step ended"));
  EXPECT_TRUE(logic_error_naming([&] { (void)c128a_layer.get(); }, "the step ended"));
  EXPECT_TRUE(logic_error_naming([] { (void)opt::TailIndices().get(); }, "empty handle"));
}

TEST_P(SharingModesTest, ATailOnlyHandleOutlivingItsIndexerIsRefused) {
  opt::TailIndices handle;
  {
    StepIndexer tail = indexer(SharingMode::kTailOnly);
    handle = tail.layer_tail_indices(ratio(kFirstC4a), c4a(kFirstC4a));
    EXPECT_TRUE(handle.valid());
  }
  EXPECT_FALSE(handle.valid());
  EXPECT_TRUE(logic_error_naming([&] { (void)handle.get(); }, "the step ended"));
}

// The cacheable kinds' builds (and the mode's shared SWA segment, or the window columns of the
// C4A shape's tail-only buffer) in one builder call; their layers then hit.
TEST_P(SharingModesTest, OneLaunchBuildsTheCacheableKindsInOneCall) {
  struct Want {
    SharingMode mode;
    int64_t builds;
  };
  for (const Want& w : {Want{SharingMode::kSeed, 2}, Want{SharingMode::kSplit, 3}, Want{SharingMode::kTailOnly, 3}}) {
    const int64_t builds = counted_->build_calls(), launches = counted_->launches();
    StepIndexer step = indexer(w.mode);
    step.build_cacheable_together(case_.schedule.compress_ratios, c4a(kFirstC4a));
    EXPECT_EQ(counted_->build_calls() - builds, w.builds) << opt::sharing_mode_name(w.mode);
    EXPECT_EQ(counted_->launches() - launches, 1) << opt::sharing_mode_name(w.mode);
    for (int32_t layer : {kSwaOnlyLayer, kFirstC128a, kFirstC4a}) {
      switch (w.mode) {
        case SharingMode::kSeed: step.layer_indices(ratio(layer), c4a(layer)); break;
        case SharingMode::kSplit: step.layer_split_indices(ratio(layer), c4a(layer)); break;
        case SharingMode::kTailOnly: {
          const opt::TailIndices t = step.layer_tail_indices(ratio(layer), c4a(layer));
          (void)step.content_errors();
          EXPECT_TRUE(same_matrix(want(layer).sparse_indices, got(t.get()).sparse_indices)) << layer;
          break;
        }
      }
    }
    EXPECT_EQ(counted_->build_calls() - builds, w.builds + 1) << opt::sharing_mode_name(w.mode);  // the C4A layer
    EXPECT_EQ(step.cache().launches(), 2);
    step.end_step();
  }
  StepIndexer uncached = indexer(SharingMode::kSplit, opt::CacheOptions{false, false});
  EXPECT_TRUE(logic_error_naming([&] { uncached.build_cacheable_together(case_.schedule.compress_ratios); },
                                 "the cache is disabled"));
}

// Layers 2 and 6 name one index source (and carry its output), layer 4 another: 2 and 6 share
// one build in every mode; in tail-only mode a sourced output is never overwritten.
TEST_P(SharingModesTest, LayersOfOneIndexSourceShareTheirBuildInEveryMode) {
  std::vector<int32_t> sources(43, -1);
  sources[2] = sources[6] = 5;
  sources[4] = 9;
  stage(harness::with_index_sources(case_, sources));
  for (SharingMode mode : {SharingMode::kSeed, SharingMode::kSplit, SharingMode::kTailOnly}) {
    const int64_t builds = counted_->build_calls();
    StepIndexer step = indexer(mode);
    const opt::BuiltIndices* shared[3] = {};
    opt::BuiltIndices outputs[3];
    opt::TailIndices tails[3];
    for (int32_t i = 0; i < 3; ++i) {
      const int32_t layer = 2 + 2 * i;
      if (mode == SharingMode::kSeed) outputs[i] = step.layer_indices(4, c4a(layer));
      if (mode == SharingMode::kSplit) outputs[i] = step.layer_split_indices(4, c4a(layer)).compressed;
      if (mode == SharingMode::kTailOnly) outputs[i] = (tails[i] = step.layer_tail_indices(4, c4a(layer))).get();
      shared[i] = &outputs[i];
    }
    EXPECT_EQ(counted_->build_calls() - builds, mode == SharingMode::kSplit ? 3 : 2) << opt::sharing_mode_name(mode);
    EXPECT_EQ(shared[0]->sparse_indices, shared[2]->sparse_indices) << opt::sharing_mode_name(mode);
    EXPECT_NE(shared[0]->sparse_indices, shared[1]->sparse_indices) << opt::sharing_mode_name(mode);
    if (mode == SharingMode::kTailOnly) {
      for (const opt::TailIndices& t : tails) EXPECT_TRUE(t.valid());
    }
    (void)step.content_errors();
    if (mode != SharingMode::kSplit) {
      EXPECT_TRUE(same_matrix(want(6).sparse_indices, got(outputs[2]).sparse_indices)) << opt::sharing_mode_name(mode);
    }
    step.end_step();
  }
}

}  // namespace
}  // namespace dsv4::testing
