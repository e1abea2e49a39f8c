// The failure report: fed deliberately wrong builders, the differential check reports the
// backend, path, layer, kind, token, request, position, column, both values and the replay
// line; wrong call counts and content-error counts are reported too.
#include <gtest/gtest.h>

#include <functional>

#include "harness/differential.h"
#include "harness/persistent_buffers.h"
#include "harness/step_factory.h"
#include "optimized/host_builder.h"
#include "property_util.h"

namespace dsv4::harness {
namespace {

// Adds one to element (token, column) of the n-th build's sparse_indices (host memory).
class FlipOneElement final : public opt::MixedSparseIndicesBuilder {
 public:
  FlipOneElement(int64_t nth_build, int32_t token, int32_t column)
      : inner_(opt::make_host_builder()), nth_(nth_build), token_(token), column_(column) {}
  opt::Backend backend() const override { return inner_->backend(); }
  opt::BuiltIndices build(const opt::BuildRequest& request) override {
    opt::BuiltIndices b = inner_->build(request);
    if (++builds_ == nth_) b.sparse_indices[static_cast<int64_t>(token_) * b.width + column_] += 1;
    return b;
  }
  int64_t take_content_errors() override { return inner_->take_content_errors() + extra_errors_; }
  void release_outputs() override { inner_->release_outputs(); }
  int64_t extra_errors_ = 0;

 private:
  std::unique_ptr<opt::MixedSparseIndicesBuilder> inner_;
  int64_t nth_, builds_ = 0;
  int32_t token_, column_;
};

// Flash, 2 decode requests of 1 token at 600 tokens of context, one prefill chunk of 5 tokens
// after 400.
StepCase flash_case() {
  StepShape shape;
  shape.num_decodes = 2;
  shape.decode_context = 600;
  shape.num_prefills = 1;
  shape.prefill_tokens_each = 5;
  shape.prefill_context = 400;
  shape.seed = 3;
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  const ref::Step step = make_step(shape);
  return StepCase{step, schedule, make_c4a_indexer_outputs(step, schedule, 3), {}, {}, {}};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MismatchReport, NamesLayerTokenColumnAndBothValues) {
  const StepCase c = flash_case();
  // Build 5 of the uncached path is layer 4 (C4A); token 3 is the prefill chunk's second
  // token (position 401); column 130 is compressed entry j = 2.
  const auto want = ref::run_step_uncached(c.step, c.schedule, c.c4a_per_layer);
  const int32_t reference_value = want[4].sparse_indices(3, 130);
  DifferentialOptions options = testing::host_only();
  options.make_builder = [](opt::Backend) { return std::make_unique<FlipOneElement>(5, 3, 130); };
  const DifferentialSummary s = differential_check(c, options, "dsv4 verify --seed 9 --step 4");

  ASSERT_EQ(s.mismatches(), 1) << s.report();
  const std::string report = s.report();
  EXPECT_TRUE(contains(report, "[host uncached] layer 4 (C4A) sparse_indices")) << report;
  EXPECT_TRUE(contains(report, "token 3 (request 2, prefill, position 401)")) << report;
  EXPECT_TRUE(contains(report, "column 130 (compressed part, j = 2)")) << report;
  EXPECT_TRUE(contains(report, "reference " + std::to_string(reference_value) + ", optimized " +
                                   std::to_string(reference_value + 1)))
      << report;
  EXPECT_TRUE(contains(report, "(1 of ")) << report;
  EXPECT_TRUE(contains(report, "replay: dsv4 verify --seed 9 --step 4")) << report;
  EXPECT_TRUE(contains(report, "schedule DeepSeek-V4-Flash") || contains(report, "schedule " + c.schedule.name)) << report;

  const Mismatch& m = s.reported.at(0);
  EXPECT_EQ(m.backend, "host");
  EXPECT_EQ(m.path, "uncached");
  EXPECT_EQ(m.layer, 4);
  EXPECT_EQ(m.token, 3);
  EXPECT_EQ(m.request, 2);
  EXPECT_EQ(m.position, 401);
  EXPECT_EQ(m.column, 130);
  EXPECT_EQ(m.expected, reference_value);
  EXPECT_EQ(m.actual, reference_value + 1);
}

TEST(MismatchReport, AFlipInACachedBuildIsReportedForTheCachedPath) {
  const StepCase c = flash_case();
  // 43 uncached builds, then the cached path's builds: its first (layer 0, SWA-only) is
  // shared by layer 1, so both layers report it; window column 5 of decode token 0.
  DifferentialOptions options = testing::host_only();
  options.make_builder = [](opt::Backend) { return std::make_unique<FlipOneElement>(44, 0, 5); };
  const DifferentialSummary s = differential_check(c, options);
  EXPECT_EQ(s.mismatches(), 2) << s.report();
  EXPECT_TRUE(contains(s.report(), "[host cached] layer 0 (SWA-only) sparse_indices: token 0 (request 0, decode, position 599), column 5 (window part, c = 5)")) << s.report();
  EXPECT_TRUE(contains(s.report(), "[host cached] layer 1 (SWA-only)")) << s.report();
}

// A wrong cache cannot be injected through the builder (the counter sits between cache and
// builder); the strength check plants one in optimized/. Here: the line it produces.
TEST(MismatchReport, CallCountLineNamesBackendPathAndBothCounts) {
  Mismatch m;
  m.backend = "cuda";
  m.path = "cached";
  m.what = "builder calls";
  m.expected = 23;
  m.actual = 43;
  EXPECT_EQ(format_mismatch(m), "[cuda cached] builder calls: expected 23, counted 43");
}

TEST(MismatchReport, WrongContentErrorCountsAreReported) {
  DifferentialOptions options = testing::host_only();
  options.make_builder = [](opt::Backend) {
    auto b = std::make_unique<FlipOneElement>(-1, 0, 0);
    b->extra_errors_ = 1;  // every take_content_errors() reports one error too many
    return b;
  };
  const DifferentialSummary s = differential_check(flash_case(), options);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.report(), "layer 0 (SWA-only) content errors: reference 0, optimized 1")) << s.report();
}

// Forwards to the host builder with every request changed by `edit`: a planted bug.
class EditsRequests final : public opt::MixedSparseIndicesBuilder {
 public:
  explicit EditsRequests(std::function<void(opt::BuildRequest&)> edit)
      : inner_(opt::make_host_builder()), edit_(std::move(edit)) {}
  opt::Backend backend() const override { return inner_->backend(); }
  opt::BuiltIndices build(const opt::BuildRequest& request) override {
    opt::BuildRequest edited = request;
    edit_(edited);
    return inner_->build(edited);
  }
  int64_t take_content_errors() override { return inner_->take_content_errors(); }
  void release_outputs() override { inner_->release_outputs(); }
  void begin_recording(int32_t chains) override { inner_->begin_recording(chains); }
  std::unique_ptr<opt::RecordedBuilds> end_recording() override { return inner_->end_recording(); }

 private:
  std::unique_ptr<opt::MixedSparseIndicesBuilder> inner_;
  std::function<void(opt::BuildRequest&)> edit_;
};

DifferentialOptions planted(std::function<void(opt::BuildRequest&)> edit) {
  DifferentialOptions options = testing::host_only();
  options.make_builder = [edit](opt::Backend) { return std::make_unique<EditsRequests>(edit); };
  options.max_reported = 1000;  // every path's mismatches in the report
  return options;
}

// flash_case in persistent buffers (SPEC §7): 3 padded rows, a request and 2 table rows past
// R, C128A 4 columns past E.
StepCase persistent_flash_case() {
  StepCase c = flash_case();
  StepCapacity extra;
  extra.extra_tokens = 3;
  extra.extra_decode_rows = 1;
  extra.extra_prefill_rows = 2;
  extra.extra_requests = 1;
  extra.extra_table_rows = 2;
  extra.c128a_extra_columns = 4;
  extra.output_row_padding = 4;
  make_persistent(c, extra, 5);
  return c;
}

TEST(MismatchReport, TheGraphPathOfACorrectBuilderAgrees) {
  const DifferentialSummary s = differential_check(persistent_flash_case(), testing::host_only());
  EXPECT_TRUE(s.ok()) << s.report();
  EXPECT_EQ(s.backends.at(0).graph_steps, 1);
  EXPECT_EQ(s.backends.at(0).calls_graph, 23);
}

// A build that never writes its status word: only the graph path gives one (SPEC §7).
TEST(MismatchReport, TheGraphPathCatchesAStatusWordNeverWritten) {
  const DifferentialSummary s =
      differential_check(persistent_flash_case(), planted([](opt::BuildRequest& r) { r.status = nullptr; }));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.report(), "[host graph replay] layer 0 (SWA-only) status word")) << s.report();
  EXPECT_FALSE(contains(s.report(), "uncached]")) << s.report();
}

// A build that ignores the base offset: every path, the graph path included.
TEST(MismatchReport, EveryPathCatchesAnIgnoredBaseOffset) {
  StepCase c = persistent_flash_case();
  c.step.swa.base_offset = 1000;  // before the step's SPEC §6 metadata is derived from it
  const DifferentialSummary s =
      differential_check(c, planted([](opt::BuildRequest& r) { r.swa.base_offset = 0; }));
  EXPECT_FALSE(s.ok());
  for (const char* path : {"[host uncached]", "[host cached]", "[host graph replay]"})
    EXPECT_TRUE(contains(s.report(), path)) << path << " missing in " << s.report();
}

// A build that reads block tables densely (ignores their row stride) on a persistent table
// with padded rows: the graph path stages the case's table strides too.
TEST(MismatchReport, TheGraphPathCatchesAnIgnoredTableRowStride) {
  StepCase c = persistent_flash_case();
  c.layout.swa_table.row_padding = 3;
  const DifferentialSummary s = differential_check(c, planted([](opt::BuildRequest& r) { r.swa.row_stride = 0; }));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.report(), "[host graph replay]")) << s.report();
}

TEST(MismatchReport, CorrectBuildersReportNothing) {
  const DifferentialSummary s = differential_check(flash_case(), testing::host_only());
  EXPECT_TRUE(s.ok()) << s.report();
  EXPECT_EQ(s.report(), "0 mismatch(es)\n");
}

}  // namespace
}  // namespace dsv4::harness
