// The per-step layer-kind cache (SPEC §5) and the StepIndexer on the host backend: call counts
// on the real schedules, identity on hit, C4A never cached, separate keys, no use after the
// step, verify_on_hit, and cached == uncached == reference on seeded realistic steps.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/step_factory.h"
#include "optimized/host_builder.h"
#include "optimized/step_index_cache.h"
#include "optimized/step_indexer.h"
#include "tests/optimized/optimized_test_support.h"

namespace dsv4::opt {
namespace {

using testing::mat;

harness::StepShape small_mixed_shape(uint64_t seed) {
  harness::StepShape shape;
  shape.num_decodes = 3;
  shape.decode_tokens_each = 2;  // speculative decoding
  shape.decode_context = 900;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 9;
  shape.prefill_context = 700;
  shape.seed = seed;
  return shape;
}

// ---- Call counts on the DeepSeek-V4 schedules (a counting decorator around the builder) ----

void expect_calls(const ref::ModelSchedule& schedule, int64_t cached_calls, int64_t uncached_calls) {
  auto builder = make_host_builder();
  const ref::Step step = harness::make_step(small_mixed_shape(11));
  const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 12);
  testing::StepRun cached, uncached;
  ASSERT_TRUE(testing::step_matches_reference(*builder, step, schedule, c4a, CacheOptions{}, &cached));
  ASSERT_TRUE(testing::step_matches_reference(*builder, step, schedule, c4a, CacheOptions{false, false},
                                              &uncached));
  EXPECT_EQ(cached.builder_calls, cached_calls) << schedule.name;
  EXPECT_EQ(cached.cache_hits, schedule.num_layers() - cached_calls) << schedule.name;
  EXPECT_EQ(uncached.builder_calls, uncached_calls) << schedule.name;
  EXPECT_EQ(uncached.cache_hits, 0) << schedule.name;
}

TEST(StepIndexCache, FlashBuilds23TimesPerStepInsteadOf43) { expect_calls(ref::deepseek_v4_flash(), 23, 43); }
TEST(StepIndexCache, ProBuilds31TimesPerStepInsteadOf61) { expect_calls(ref::deepseek_v4_pro(), 31, 61); }

// ---- Seeded realistic steps: every layer equals the reference, cached and uncached ----

TEST(StepIndexCache, RandomStepsMatchReferenceOnBothSchedules) {
  auto builder = make_host_builder();
  std::mt19937_64 rng(99);
  for (int i = 0; i < 6; ++i) {
    harness::StepShape shape;
    shape.num_decodes = testing::uniform(rng, 0, 4);
    shape.decode_tokens_each = testing::uniform(rng, 1, 2);
    shape.decode_context = testing::uniform(rng, 2, 3000);
    shape.num_prefills = testing::uniform(rng, 0, 2);
    shape.prefill_tokens_each = testing::uniform(rng, 0, 20);
    shape.prefill_context = testing::uniform(rng, 0, 3000);
    shape.swa_block_size = i % 2 == 0 ? 64 : 16;
    shape.seed = 1000 + static_cast<uint64_t>(i);
    const ref::Step step = harness::make_step(shape);
    for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
      const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 2000 + static_cast<uint64_t>(i));
      for (CacheOptions options : {CacheOptions{}, CacheOptions{false, false}, CacheOptions{true, true}}) {
        ASSERT_TRUE(testing::step_matches_reference(*builder, step, schedule, c4a, options))
            << "step " << i;
      }
    }
  }
}

// Corrupted caches and indexer picks: equal -1s everywhere, error counts equal to the
// reference's (uncached: every layer; cached: the layers actually built).
TEST(StepIndexCache, CorruptedStepCountsContentErrorsLikeTheReference) {
  auto builder = make_host_builder();
  ref::Step step = harness::make_step(small_mixed_shape(21));
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 22);
  step.c4a.block_table(0, 0) = -1;    // negative entry: decode request 0's first C4A block
  step.c128a.block_table(4, 1) = -3;  // prefill request (index 4)'s second C128A block
  step.swa.block_table(3, 10) = -1;   // SWA block of prefill request 3 (its window reaches it)
  for (auto& layer : c4a) {
    if (layer.prefill_topk.size() > 0) layer.prefill_topk(0, 0) = 1 << 20;  // past the width
    if (layer.decode_local.size() > 0) layer.decode_local(1, 0) = -7;       // no entry
  }
  int64_t reference_total = 0;
  for (const auto& out : ref::run_step_uncached(step, schedule, c4a)) reference_total += out.content_errors;
  ASSERT_GT(reference_total, 0);
  for (CacheOptions options : {CacheOptions{}, CacheOptions{false, false}, CacheOptions{true, true}}) {
    EXPECT_TRUE(testing::step_matches_reference(*builder, step, schedule, c4a, options));
  }
}

TEST(StepIndexCache, SteadyStateStepsReuseTheWorkspace) {
  auto builder = make_host_builder();
  const ref::Step step = harness::make_step(small_mixed_shape(31));
  const ref::ModelSchedule schedule = ref::deepseek_v4_pro();
  EXPECT_TRUE(testing::steady_state_reuses_workspace(
      *builder, step, schedule, harness::make_c4a_indexer_outputs(step, schedule, 32)));
}

// ---- The cache itself on hand-built requests ----

struct CacheFixture {
  std::unique_ptr<MixedSparseIndicesBuilder> inner = make_host_builder();
  testing::CountingBuilder builder{*inner};
  testing::StagedRequest swa{Backend::kHost, testing::tiny_swa_only()};
  testing::StagedRequest c128a{Backend::kHost, testing::tiny_c128a()};
  testing::StagedRequest c4a{Backend::kHost, testing::tiny_c4a()};
};

TEST(StepIndexCache, HitReturnsTheSameBuffers) {
  CacheFixture f;
  StepIndexCache cache(f.builder);
  const BuiltIndices a = cache.get_or_build(LayerKind::kC128A, f.c128a.request());
  const BuiltIndices b = cache.get_or_build(LayerKind::kC128A, f.c128a.request());
  EXPECT_EQ(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(a.sparse_lens, b.sparse_lens);
  EXPECT_EQ(a.num_tokens, b.num_tokens);
  EXPECT_EQ(a.width, b.width);
  const BuiltIndices s1 = cache.get_or_build(LayerKind::kSwaOnly, f.swa.request());
  const BuiltIndices s2 = cache.get_or_build(LayerKind::kSwaOnly, f.swa.request());
  EXPECT_EQ(s1.sparse_indices, s2.sparse_indices);
  EXPECT_NE(s1.sparse_indices, a.sparse_indices);
  EXPECT_EQ(f.builder.calls(), 2);
  EXPECT_EQ(cache.builder_calls(), 2);
  EXPECT_EQ(cache.hits(), 2);
  EXPECT_EQ(cache.entries(), 2u);
}

TEST(StepIndexCache, C4AIsNeverCached) {
  CacheFixture f;
  StepIndexCache cache(f.builder);
  const BuiltIndices a = cache.get_or_build(LayerKind::kC4A, f.c4a.request());
  const BuiltIndices b = cache.get_or_build(LayerKind::kC4A, f.c4a.request());
  EXPECT_NE(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(f.builder.calls(), 2);
  EXPECT_EQ(cache.hits(), 0);
  EXPECT_EQ(cache.entries(), 0u);
}

TEST(StepIndexCache, DisabledCacheAlwaysBuilds) {
  CacheFixture f;
  StepIndexCache cache(f.builder, CacheOptions{false, false});
  cache.get_or_build(LayerKind::kSwaOnly, f.swa.request());
  cache.get_or_build(LayerKind::kSwaOnly, f.swa.request());
  EXPECT_EQ(f.builder.calls(), 2);
  EXPECT_EQ(cache.hits(), 0);
}

// Same kind, different row count / window / widths / block sizes: separate entries.
TEST(StepIndexCache, KeyPropertiesSeparateEntries) {
  CacheFixture f;
  StepIndexCache cache(f.builder);
  const BuiltIndices base = cache.get_or_build(LayerKind::kC128A, f.c128a.request());

  ref::BuilderInputs wider_window = testing::tiny_c128a();
  wider_window.window = 8;
  wider_window.decode_swa_indices = ref::IndexMatrix::Constant(1, 8, -1);
  testing::StagedRequest w8(Backend::kHost, wider_window);
  const BuiltIndices other_window = cache.get_or_build(LayerKind::kC128A, w8.request());
  EXPECT_NE(other_window.sparse_indices, base.sparse_indices);
  EXPECT_EQ(other_window.width, 8 + 4);

  // One request fewer (request 1 only: two prefill tokens).
  ref::BuilderInputs fewer_rows = testing::tiny_c128a();
  fewer_rows.decode_swa_indices = ref::IndexMatrix(0, 4);
  fewer_rows.decode_compressed = ref::IndexMatrix(0, 2);
  fewer_rows.decode_compressed_lens = ref::IndexVector(0);
  fewer_rows.query_start_loc = testing::vec({0, 2});
  fewer_rows.seq_lens = testing::vec({10});
  fewer_rows.token_to_req = testing::vec({0, 0});
  fewer_rows.swa.block_table = mat(1, 2, {2, 3});
  fewer_rows.compressed->block_table = mat(1, 2, {2, 3});
  testing::StagedRequest r1(Backend::kHost, fewer_rows);
  const BuiltIndices other_rows = cache.get_or_build(LayerKind::kC128A, r1.request());
  EXPECT_NE(other_rows.sparse_indices, base.sparse_indices);
  EXPECT_EQ(other_rows.num_tokens, 2);

  ref::BuilderInputs other_block = testing::tiny_c128a();
  other_block.compressed->block_size = 4;
  testing::StagedRequest b4(Backend::kHost, other_block);
  EXPECT_NE(cache.get_or_build(LayerKind::kC128A, b4.request()).sparse_indices, base.sparse_indices);

  ref::BuilderInputs other_topk = testing::tiny_c128a();
  other_topk.topk = 7;
  testing::StagedRequest k7(Backend::kHost, other_topk);
  EXPECT_NE(cache.get_or_build(LayerKind::kC128A, k7.request()).sparse_indices, base.sparse_indices);

  EXPECT_EQ(f.builder.calls(), 5);
  EXPECT_EQ(cache.entries(), 5u);
  // Each variant hits its own entry afterwards.
  EXPECT_EQ(cache.get_or_build(LayerKind::kC128A, w8.request()).sparse_indices, other_window.sparse_indices);
  EXPECT_EQ(cache.get_or_build(LayerKind::kC128A, r1.request()).sparse_indices, other_rows.sparse_indices);
  EXPECT_EQ(cache.get_or_build(LayerKind::kC128A, f.c128a.request()).sparse_indices, base.sparse_indices);
  EXPECT_EQ(f.builder.calls(), 5);
}

TEST(StepIndexCache, CacheKeyCoversEveryField) {
  testing::StagedRequest staged(Backend::kHost, testing::tiny_c128a());
  const BuildRequest base = staged.request();
  const CacheKey k = cache_key(LayerKind::kC128A, base);
  EXPECT_TRUE(k == cache_key(LayerKind::kC128A, base));
  EXPECT_FALSE(k == cache_key(LayerKind::kSwaOnly, base));
  auto differs = [&](auto mutate) {
    BuildRequest r = base;
    mutate(r);
    return !(k == cache_key(LayerKind::kC128A, r));
  };
  EXPECT_TRUE(differs([](BuildRequest& r) { r.num_tokens += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.num_decode_tokens += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.num_requests += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.window += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.ratio += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.topk += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.decode_compressed.cols += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.prefill_topk.cols += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.decode_local = !r.decode_local; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.decode_compressed_lens = nullptr; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.decode_valid = reinterpret_cast<const uint8_t*>(r.seq_lens); }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.swa.block_size += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.swa.blocks_per_row += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.compressed.block_size += 1; }));
  EXPECT_TRUE(differs([](BuildRequest& r) { r.compressed.blocks_per_row += 1; }));
  // Data pointers are not part of the key: same-kind layers of a step share inputs (SPEC §5).
  EXPECT_FALSE(differs([](BuildRequest& r) { r.prefill_topk.data += 1; }));
}

TEST(StepIndexCache, UseAfterEndOfStepThrowsNeverAStaleHit) {
  CacheFixture f;
  StepIndexCache cache(f.builder);
  cache.get_or_build(LayerKind::kSwaOnly, f.swa.request());
  EXPECT_FALSE(cache.ended());
  cache.end_step();
  EXPECT_TRUE(cache.ended());
  EXPECT_THROW(cache.get_or_build(LayerKind::kSwaOnly, f.swa.request()), std::logic_error);
  EXPECT_THROW(cache.get_or_build(LayerKind::kC4A, f.c4a.request()), std::logic_error);
  EXPECT_EQ(f.builder.calls(), 1);
  EXPECT_NO_THROW(cache.end_step());  // idempotent
}

TEST(StepIndexCache, StepIndexerRefusesUseAfterEndOfStep) {
  auto builder = make_host_builder();
  const ref::Step step = harness::make_step(small_mixed_shape(5));
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 6);
  harness::BackendStep staged(Backend::kHost, step, schedule, c4a);
  StepIndexer indexer(*builder, staged.inputs());
  indexer.layer_indices(0);
  indexer.end_step();
  EXPECT_THROW(indexer.layer_indices(0), std::logic_error);
  EXPECT_THROW(indexer.layer_indices(128), std::logic_error);
  EXPECT_THROW(indexer.layer_indices(4, staged.c4a(2)), std::logic_error);
}

TEST(StepIndexCache, VerifyOnHitRebuildsAndPassesWhenEqual) {
  CacheFixture f;
  StepIndexCache cache(f.builder, CacheOptions{true, true});
  const BuiltIndices a = cache.get_or_build(LayerKind::kC128A, f.c128a.request());
  const BuiltIndices b = cache.get_or_build(LayerKind::kC128A, f.c128a.request());
  EXPECT_EQ(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(cache.builder_calls(), 1);  // verify rebuilds not counted
  EXPECT_EQ(f.builder.calls(), 2);      // but they happen
}

TEST(StepIndexCache, VerifyOnHitCatchesACorruptedCachedBuffer) {
  CacheFixture f;
  StepIndexCache cache(f.builder, CacheOptions{true, true});
  const BuiltIndices built = cache.get_or_build(LayerKind::kC128A, f.c128a.request());
  built.sparse_indices[1 * built.width + 2] = 4242;  // token 1, column 2 (was 135)
  try {
    cache.get_or_build(LayerKind::kC128A, f.c128a.request());
    FAIL() << "a corrupted cached buffer was not detected";
  } catch (const std::logic_error& e) {
    const std::string message = e.what();
    for (const char* needle : {"C128A", "token 1", "column 2", "4242", "135"}) {
      EXPECT_NE(message.find(needle), std::string::npos) << message << " lacks " << needle;
    }
  }
  // A corrupted length is named too.
  StepIndexCache swa_cache(f.builder, CacheOptions{true, true});
  const BuiltIndices s = swa_cache.get_or_build(LayerKind::kSwaOnly, f.swa.request());
  s.sparse_lens[2] = 99;
  try {
    swa_cache.get_or_build(LayerKind::kSwaOnly, f.swa.request());
    FAIL() << "a corrupted cached length was not detected";
  } catch (const std::logic_error& e) {
    const std::string message = e.what();
    for (const char* needle : {"SWA-only", "token 2", "sparse_lens", "99"}) {
      EXPECT_NE(message.find(needle), std::string::npos) << message << " lacks " << needle;
    }
  }
}

// verify_on_hit's rebuilds do not change the error count (the corrupted C4A tiny batch has 8
// SWA errors per build; three hits would otherwise add 24).
TEST(StepIndexCache, VerifyRebuildsAreNotCountedAsContentErrors) {
  CacheFixture f;
  ref::BuilderInputs in = testing::tiny_c128a();
  in.swa.block_table = mat(2, 2, {0, 1, -1, 3});
  testing::StagedRequest staged(Backend::kHost, in);
  for (bool verify : {false, true}) {
    StepIndexCache cache(f.builder, CacheOptions{true, verify});
    for (int i = 0; i < 4; ++i) cache.get_or_build(LayerKind::kC128A, staged.request());
    EXPECT_EQ(cache.take_content_errors(), 8) << "verify " << verify;
    EXPECT_EQ(cache.take_content_errors(), 0);
  }
}

}  // namespace
}  // namespace dsv4::opt
