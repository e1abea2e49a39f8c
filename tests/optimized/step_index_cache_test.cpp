// The per-step layer-kind cache (SPEC §5) on hand-built requests, on every backend: identity on
// hit, C4A never cached, separate keys, no use after the step, verify_on_hit.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/counting_builder.h"
#include "harness/hand_cases.h"
#include "optimized/host_builder.h"
#include "optimized/step_index_cache.h"
#include "support/assertions.h"
#include "support/backend_test.h"
#include "support/expectations.h"

namespace dsv4::testing {
namespace {

using harness::mat;
using opt::BuiltIndices;
using opt::CacheOptions;
using opt::LayerKind;
using opt::StepIndexCache;

// A counted builder of the test's backend and the tiny batch's three layers staged on it.
class StepIndexCacheTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    counted_ = std::make_unique<harness::CountingBuilder>(builder());
    swa_ = std::make_unique<harness::StagedRequest>(backend(), harness::tiny_swa_only());
    c128a_ = std::make_unique<harness::StagedRequest>(backend(), harness::tiny_c128a());
    c4a_ = std::make_unique<harness::StagedRequest>(backend(), harness::tiny_c4a());
  }
  void TearDown() override {
    swa_.reset();
    c128a_.reset();
    c4a_.reset();
    counted_.reset();
    BackendTest::TearDown();
  }
  harness::CountingBuilder& counted() { return *counted_; }
  const opt::BuildRequest& swa() const { return swa_->request(); }
  const opt::BuildRequest& c128a() const { return c128a_->request(); }
  const opt::BuildRequest& c4a() const { return c4a_->request(); }

 private:
  std::unique_ptr<harness::CountingBuilder> counted_;
  std::unique_ptr<harness::StagedRequest> swa_, c128a_, c4a_;
};
DSV4_ON_EVERY_BACKEND(StepIndexCacheTest);

TEST_P(StepIndexCacheTest, HitReturnsTheSameBuffers) {
  StepIndexCache cache(counted());
  const BuiltIndices a = cache.get_or_build(LayerKind::kC128A, c128a());
  const BuiltIndices b = cache.get_or_build(LayerKind::kC128A, c128a());
  EXPECT_EQ(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(a.sparse_lens, b.sparse_lens);
  EXPECT_EQ(a.num_tokens, b.num_tokens);
  EXPECT_EQ(a.width, b.width);
  const BuiltIndices s1 = cache.get_or_build(LayerKind::kSwaOnly, swa());
  const BuiltIndices s2 = cache.get_or_build(LayerKind::kSwaOnly, swa());
  EXPECT_EQ(s1.sparse_indices, s2.sparse_indices);
  EXPECT_NE(s1.sparse_indices, a.sparse_indices);
  EXPECT_EQ(counted().build_calls(), 2);
  EXPECT_EQ(cache.builder_calls(), 2);
  EXPECT_EQ(cache.hits(), 2);
  EXPECT_EQ(cache.entries(), 2u);
}

TEST_P(StepIndexCacheTest, C4AIsNeverCached) {
  StepIndexCache cache(counted());
  const BuiltIndices a = cache.get_or_build(LayerKind::kC4A, c4a());
  const BuiltIndices b = cache.get_or_build(LayerKind::kC4A, c4a());
  EXPECT_NE(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(counted().build_calls(), 2);
  EXPECT_EQ(cache.hits(), 0);
  EXPECT_EQ(cache.entries(), 0u);
}

// SPEC §8: a C4A layer naming its index source is cached per (source, shape); another source,
// another top-k or no source builds.
TEST_P(StepIndexCacheTest, C4aIsCachedPerIndexSourceAndShape) {
  StepIndexCache cache(counted());
  const BuiltIndices a = cache.get_or_build(LayerKind::kC4A, c4a(), 3);
  const BuiltIndices b = cache.get_or_build(LayerKind::kC4A, c4a(), 3);
  EXPECT_EQ(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(a.sparse_lens, b.sparse_lens);
  EXPECT_NE(cache.get_or_build(LayerKind::kC4A, c4a(), 4).sparse_indices, a.sparse_indices);
  const BuiltIndices none = cache.get_or_build(LayerKind::kC4A, c4a());
  EXPECT_NE(none.sparse_indices, a.sparse_indices);
  EXPECT_NE(cache.get_or_build(LayerKind::kC4A, c4a(), -1).sparse_indices, none.sparse_indices);
  ref::BuilderInputs topk7 = harness::tiny_c4a();
  topk7.topk = 7;
  harness::StagedRequest k7(backend(), topk7);
  EXPECT_NE(cache.get_or_build(LayerKind::kC4A, k7.request(), 3).sparse_indices, a.sparse_indices);
  EXPECT_EQ(counted().build_calls(), 5);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.get_or_build(LayerKind::kC4A, c4a(), 3).sparse_indices, a.sparse_indices);
  const ref::BuilderOutput want = ref::build_mixed_sparse_indices(harness::tiny_c4a());
  (void)cache.take_content_errors();  // synchronizes
  EXPECT_TRUE(same_matrix(want.sparse_indices, harness::download(backend(), a).sparse_indices));
}

TEST(CacheKeys, NameThePartAndTheIndexSource) {
  harness::StagedRequest staged(opt::Backend::kHost, harness::tiny_c4a());
  opt::BuildRequest r = staged.request();
  EXPECT_FALSE(opt::cache_key(LayerKind::kC4A, r, 3) == opt::cache_key(LayerKind::kC4A, r, 4));
  EXPECT_FALSE(opt::cache_key(LayerKind::kC4A, r, 3) == opt::cache_key(LayerKind::kC4A, r));
  EXPECT_TRUE(opt::cache_key(LayerKind::kC4A, r, -7) == opt::cache_key(LayerKind::kC4A, r));
  opt::BuildRequest compressed = r;
  compressed.part = opt::RowPart::kCompressed;
  EXPECT_FALSE(opt::cache_key(LayerKind::kC4A, r, 3) == opt::cache_key(LayerKind::kC4A, compressed, 3));
  EXPECT_TRUE(opt::is_cacheable(LayerKind::kC4A, 0));
  EXPECT_FALSE(opt::is_cacheable(LayerKind::kC4A, -1));
  EXPECT_TRUE(opt::is_cacheable(LayerKind::kC128A, -1));
}

// SPEC §8 one launch: the builds of new keys in one builder call (a duplicate key once, a key
// already cached a hit, an uncacheable build built but not kept); later calls of the new keys hit.
TEST_P(StepIndexCacheTest, BuildTogetherBuildsTheNewKeysInOneCall) {
  StepIndexCache cache(counted());
  const BuiltIndices cached = cache.get_or_build(LayerKind::kC128A, c128a());
  const opt::LayerBuild builds[4] = {{LayerKind::kSwaOnly, swa(), -1},
                                     {LayerKind::kC128A, c128a(), -1},
                                     {LayerKind::kC4A, c4a(), -1},
                                     {LayerKind::kSwaOnly, swa(), -1}};
  BuiltIndices out[4];
  cache.build_together(builds, 4, out);
  EXPECT_EQ(counted().build_calls(), 3);
  EXPECT_EQ(counted().launches(), 2);
  EXPECT_EQ(cache.builder_calls(), 3);
  EXPECT_EQ(cache.launches(), 2);
  EXPECT_EQ(out[1].sparse_indices, cached.sparse_indices);
  EXPECT_EQ(out[3].sparse_indices, out[0].sparse_indices);
  EXPECT_EQ(cache.get_or_build(LayerKind::kSwaOnly, swa()).sparse_indices, out[0].sparse_indices);
  EXPECT_NE(cache.get_or_build(LayerKind::kC4A, c4a()).sparse_indices, out[2].sparse_indices);
  EXPECT_EQ(counted().build_calls(), 4);
  (void)cache.take_content_errors();  // synchronizes
  EXPECT_TRUE(same_matrix(ref::build_mixed_sparse_indices(harness::tiny_swa_only()).sparse_indices,
                          harness::download(backend(), out[0]).sparse_indices));
  EXPECT_TRUE(same_matrix(ref::build_mixed_sparse_indices(harness::tiny_c4a()).sparse_indices,
                          harness::download(backend(), out[2]).sparse_indices));
}

TEST_P(StepIndexCacheTest, BuildTogetherRefusesWhatItCannotShare) {
  const opt::LayerBuild builds[5] = {{LayerKind::kSwaOnly, swa(), -1}, {LayerKind::kSwaOnly, swa(), -1},
                                     {LayerKind::kSwaOnly, swa(), -1}, {LayerKind::kSwaOnly, swa(), -1},
                                     {LayerKind::kSwaOnly, swa(), -1}};
  BuiltIndices out[5];
  StepIndexCache disabled(counted(), CacheOptions{false, false});
  EXPECT_THROW(disabled.build_together(builds, 1, out), std::logic_error);
  StepIndexCache cache(counted());
  EXPECT_THROW(cache.build_together(builds, 5, out), std::invalid_argument);
  cache.end_step();
  EXPECT_THROW(cache.build_together(builds, 1, out), std::logic_error);
  EXPECT_EQ(counted().build_calls(), 0);
}

TEST_P(StepIndexCacheTest, DisabledCacheAlwaysBuilds) {
  StepIndexCache cache(counted(), CacheOptions{false, false});
  cache.get_or_build(LayerKind::kSwaOnly, swa());
  cache.get_or_build(LayerKind::kSwaOnly, swa());
  EXPECT_EQ(counted().build_calls(), 2);
  EXPECT_EQ(cache.hits(), 0);
}

// Same kind, different row count / window / widths / block sizes: separate entries.
TEST_P(StepIndexCacheTest, KeyPropertiesSeparateEntries) {
  StepIndexCache cache(counted());
  const BuiltIndices base = cache.get_or_build(LayerKind::kC128A, c128a());

  ref::BuilderInputs wider_window = harness::tiny_c128a();
  wider_window.window = 8;
  wider_window.decode_swa_indices = ref::IndexMatrix::Constant(1, 8, -1);
  harness::StagedRequest w8(backend(), wider_window);
  const BuiltIndices other_window = cache.get_or_build(LayerKind::kC128A, w8.request());
  EXPECT_NE(other_window.sparse_indices, base.sparse_indices);
  EXPECT_EQ(other_window.width, 8 + 4);

  // One request fewer (request 1 only: two prefill tokens).
  ref::BuilderInputs fewer_rows = harness::tiny_c128a();
  fewer_rows.decode_swa_indices = ref::IndexMatrix(0, 4);
  fewer_rows.decode_compressed = ref::IndexMatrix(0, 2);
  fewer_rows.decode_compressed_lens = ref::IndexVector(0);
  fewer_rows.query_start_loc = harness::vec({0, 2});
  fewer_rows.seq_lens = harness::vec({10});
  fewer_rows.token_to_req = harness::vec({0, 0});
  fewer_rows.swa.block_table = mat(1, 2, {2, 3});
  fewer_rows.compressed->block_table = mat(1, 2, {2, 3});
  harness::StagedRequest r1(backend(), fewer_rows);
  const BuiltIndices other_rows = cache.get_or_build(LayerKind::kC128A, r1.request());
  EXPECT_NE(other_rows.sparse_indices, base.sparse_indices);
  EXPECT_EQ(other_rows.num_tokens, 2);

  ref::BuilderInputs other_block = harness::tiny_c128a();
  other_block.compressed->block_size = 4;
  harness::StagedRequest b4(backend(), other_block);
  EXPECT_NE(cache.get_or_build(LayerKind::kC128A, b4.request()).sparse_indices, base.sparse_indices);

  ref::BuilderInputs other_topk = harness::tiny_c128a();
  other_topk.topk = 7;
  harness::StagedRequest k7(backend(), other_topk);
  EXPECT_NE(cache.get_or_build(LayerKind::kC128A, k7.request()).sparse_indices, base.sparse_indices);

  EXPECT_EQ(counted().build_calls(), 5);
  EXPECT_EQ(cache.entries(), 5u);
  // Each variant hits its own entry afterwards.
  EXPECT_EQ(cache.get_or_build(LayerKind::kC128A, w8.request()).sparse_indices, other_window.sparse_indices);
  EXPECT_EQ(cache.get_or_build(LayerKind::kC128A, r1.request()).sparse_indices, other_rows.sparse_indices);
  EXPECT_EQ(cache.get_or_build(LayerKind::kC128A, c128a()).sparse_indices, base.sparse_indices);
  EXPECT_EQ(counted().build_calls(), 5);
}

TEST_P(StepIndexCacheTest, UseAfterEndOfStepThrowsNeverAStaleHit) {
  StepIndexCache cache(counted());
  cache.get_or_build(LayerKind::kSwaOnly, swa());
  EXPECT_FALSE(cache.ended());
  cache.end_step();
  EXPECT_TRUE(cache.ended());
  EXPECT_THROW(cache.get_or_build(LayerKind::kSwaOnly, swa()), std::logic_error);
  EXPECT_THROW(cache.get_or_build(LayerKind::kC4A, c4a()), std::logic_error);
  EXPECT_EQ(counted().build_calls(), 1);
  EXPECT_NO_THROW(cache.end_step());  // idempotent
}

TEST_P(StepIndexCacheTest, VerifyOnHitRebuildsAndPassesWhenEqual) {
  StepIndexCache cache(counted(), CacheOptions{true, true});
  const BuiltIndices a = cache.get_or_build(LayerKind::kC128A, c128a());
  const BuiltIndices b = cache.get_or_build(LayerKind::kC128A, c128a());
  EXPECT_EQ(a.sparse_indices, b.sparse_indices);
  EXPECT_EQ(cache.builder_calls(), 1);      // verify rebuilds not counted
  EXPECT_EQ(counted().build_calls(), 2);  // but they happen
  // Into caller-owned rows wider than the output (SPEC §7): compared row by row.
  harness::RequestLayout wide;
  wide.caller_output = true;
  wide.output_row_padding = 4;
  harness::StagedRequest owned(backend(), harness::tiny_c128a(), wide);
  const BuiltIndices c = cache.get_or_build(LayerKind::kC128A, owned.request());
  EXPECT_NE(c.row_stride, c.width);
  EXPECT_EQ(cache.get_or_build(LayerKind::kC128A, owned.request()).sparse_indices, c.sparse_indices);
}

// The message of a verify_on_hit failure names every needle.
::testing::AssertionResult verify_fails_naming(StepIndexCache& cache, LayerKind kind, const opt::BuildRequest& r,
                                               const std::vector<std::string>& needles) {
  try {
    cache.get_or_build(kind, r);
  } catch (const std::logic_error& e) {
    const std::string message = e.what();
    for (const std::string& needle : needles)
      if (message.find(needle) == std::string::npos)
        return ::testing::AssertionFailure() << message << " lacks " << needle;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "a corrupted cached output was not detected";
}

TEST_P(StepIndexCacheTest, VerifyOnHitCatchesACorruptedCachedBuffer) {
  StepIndexCache cache(counted(), CacheOptions{true, true});
  const BuiltIndices built = cache.get_or_build(LayerKind::kC128A, c128a());
  write_int(backend(), built.sparse_indices + 1 * built.width + 2, 4242);  // token 1, column 2 (was 135)
  EXPECT_TRUE(verify_fails_naming(cache, LayerKind::kC128A, c128a(), {"C128A", "token 1", "column 2", "4242", "135"}));
  // A corrupted length is named too.
  StepIndexCache swa_cache(counted(), CacheOptions{true, true});
  const BuiltIndices s = swa_cache.get_or_build(LayerKind::kSwaOnly, swa());
  write_int(backend(), s.sparse_lens + 2, 99);
  EXPECT_TRUE(verify_fails_naming(swa_cache, LayerKind::kSwaOnly, swa(), {"SWA-only", "token 2", "sparse_lens", "99"}));
}

// verify_on_hit's rebuilds do not change the error count (the corrupted C128A tiny batch has 8
// SWA errors per build; three hits would otherwise add 24).
TEST_P(StepIndexCacheTest, VerifyRebuildsAreNotCountedAsContentErrors) {
  ref::BuilderInputs in = harness::tiny_c128a();
  in.swa.block_table = mat(2, 2, {0, 1, -1, 3});
  harness::StagedRequest staged(backend(), in);
  for (bool verify : {false, true}) {
    StepIndexCache cache(counted(), CacheOptions{true, verify});
    for (int i = 0; i < 4; ++i) cache.get_or_build(LayerKind::kC128A, staged.request());
    EXPECT_EQ(cache.take_content_errors(), 8) << "verify " << verify;
    EXPECT_EQ(cache.take_content_errors(), 0);
  }
}

// A host builder whose n-th build reports one row or column fewer, or whose release throws:
// what verify_on_hit and the cache's destructor must survive.
class FaultyBuilder final : public opt::MixedSparseIndicesBuilder {
 public:
  int64_t shrink_build = -1;  // this build's output loses a column (or a row, shrink_rows)
  bool shrink_rows = false;
  bool throw_on_release = false;
  opt::Backend backend() const override { return opt::Backend::kHost; }
  opt::BuiltIndices build(const opt::BuildRequest& request) override {
    opt::BuiltIndices b = inner_->build(request);
    if (++builds_ == shrink_build) (shrink_rows ? b.num_tokens : b.width) -= 1;
    return b;
  }
  int64_t take_content_errors() override { return inner_->take_content_errors(); }
  void release_outputs() override {
    inner_->release_outputs();
    if (throw_on_release) throw std::runtime_error("release failed");
  }

 private:
  std::unique_ptr<opt::MixedSparseIndicesBuilder> inner_ = opt::make_host_builder();
  int64_t builds_ = 0;
};

TEST(StepIndexCacheFaults, VerifyOnHitNamesARebuildOfAnotherShape) {
  harness::StagedRequest staged(opt::Backend::kHost, harness::tiny_c128a());
  for (bool rows : {false, true}) {
    FaultyBuilder builder;
    builder.shrink_build = 2;  // the verify rebuild of the first hit
    builder.shrink_rows = rows;
    StepIndexCache cache(builder, CacheOptions{true, true});
    cache.get_or_build(LayerKind::kC128A, staged.request());
    EXPECT_TRUE(verify_fails_naming(cache, LayerKind::kC128A, staged.request(),
                                    {rows ? "num_tokens" : "width", rows ? "cached 3, rebuilt 2" : "cached 8, rebuilt 7"}));
  }
}

// A builder that cannot record says so (CUDA-graph recording is the backends' own).
TEST(StepIndexCacheFaults, ABuilderWithoutRecordingRefusesToRecord) {
  FaultyBuilder builder;
  EXPECT_THROW(builder.begin_recording(1), std::logic_error);
  EXPECT_THROW(builder.end_recording(), std::logic_error);
}

// A destructor must not throw: a release that fails at the end of the step is swallowed there.
TEST(StepIndexCacheFaults, DestructorSurvivesAReleaseThatThrows) {
  FaultyBuilder builder;
  builder.throw_on_release = true;
  EXPECT_NO_THROW({ StepIndexCache cache(builder); });
  StepIndexCache cache(builder);
  EXPECT_THROW(cache.end_step(), std::runtime_error);  // but end_step itself reports it
}

// The key itself (host code, no backend): every field separates, data pointers do not.
TEST(StepIndexCacheKey, CoversEveryField) {
  harness::StagedRequest staged(opt::Backend::kHost, harness::tiny_c128a());
  const opt::BuildRequest base = staged.request();
  const opt::CacheKey k = opt::cache_key(LayerKind::kC128A, base);
  EXPECT_TRUE(k == opt::cache_key(LayerKind::kC128A, base));
  EXPECT_FALSE(k == opt::cache_key(LayerKind::kSwaOnly, base));
  auto differs = [&](auto mutate) {
    opt::BuildRequest r = base;
    mutate(r);
    return !(k == opt::cache_key(LayerKind::kC128A, r));
  };
  using R = opt::BuildRequest;
  EXPECT_TRUE(differs([](R& r) { r.num_tokens += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.num_decode_tokens += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.num_requests += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.window += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.ratio += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.topk += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.decode_compressed.cols += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.prefill_topk.cols += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.decode_local = !r.decode_local; }));
  EXPECT_TRUE(differs([](R& r) { r.decode_compressed_lens = nullptr; }));
  EXPECT_TRUE(differs([](R& r) { r.decode_valid = reinterpret_cast<const uint8_t*>(r.seq_lens); }));
  EXPECT_TRUE(differs([](R& r) { r.swa.block_size += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.swa.blocks_per_row += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.compressed.block_size += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.compressed.blocks_per_row += 1; }));
  EXPECT_TRUE(differs([](R& r) { r.swa.row_stride = 5; }));
  EXPECT_TRUE(differs([](R& r) { r.swa.block_span = 70; }));
  EXPECT_TRUE(differs([](R& r) { r.swa.base_offset = 9; }));
  EXPECT_TRUE(differs([](R& r) { r.compressed.row_stride = 5; }));
  EXPECT_TRUE(differs([](R& r) { r.compressed.block_span = 3; }));
  EXPECT_TRUE(differs([](R& r) { r.compressed.base_offset = 9; }));
  EXPECT_TRUE(differs([](R& r) { r.row_capacity = 8; }));
  EXPECT_TRUE(differs([](R& r) { r.compressed_capacity = 8; }));
  int32_t somewhere[4] = {};
  EXPECT_TRUE(differs([&](R& r) { r.output.sparse_indices = somewhere; }));
  EXPECT_TRUE(differs([&](R& r) { r.run_time_sizes = reinterpret_cast<const opt::StepSizes*>(somewhere); }));
  EXPECT_TRUE(differs([&](R& r) { r.status = reinterpret_cast<opt::MetadataStatus*>(somewhere); }));
  // Data pointers are not part of the key: same-kind layers of a step share inputs (SPEC §5).
  EXPECT_FALSE(differs([](R& r) { r.prefill_topk.data += 1; }));
}

}  // namespace
}  // namespace dsv4::testing
