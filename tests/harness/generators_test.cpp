// The generators: what they draw is structurally valid and (for valid steps) free of content
// errors, covers the SPEC §6 space the brief lists, scales with RapidCheck's size, and
// shrinks toward small steps.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <climits>
#include <map>
#include <optional>

#include "harness/generators.h"
#include "harness/graph_step.h"
#include "property_util.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {
namespace {

using testing::small_steps;

int64_t total_errors(const std::vector<ref::BuilderOutput>& outputs) {
  int64_t n = 0;
  for (const ref::BuilderOutput& o : outputs) n += o.content_errors;
  return n;
}

// The reference's checked builds of a case's persistent buffers (SPEC §7), one per layer as
// the graph path records them: (content errors, the first failing status or kNone).
std::pair<int64_t, ref::MetadataCheck> persistent_reference(const StepCase& c) {
  const GraphStepBuffers buffers(opt::Backend::kHost, c);
  int64_t errors = 0;
  ref::MetadataCheck first = ref::MetadataCheck::kNone;
  for (int32_t layer = 0; layer < c.schedule.num_layers(); ++layer) {
    const ref::CheckedBuild b = ref::build_mixed_sparse_indices(buffers.reference_inputs(layer), c.persistent->sizes);
    errors += b.output.content_errors;
    if (first == ref::MetadataCheck::kNone) first = b.status.check;
  }
  return {errors, first};
}

RC_GTEST_PROP(Generators, ValidStepsPassValidationWithoutContentErrors, ()) {
  const StepCase c = *gen_step_case(ScheduleChoice::kAny, small_steps());
  RC_ASSERT(c.c4a_per_layer.size() == c.schedule.compress_ratios.size());
  RC_ASSERT(c.step.decode_valid.empty() ||
            c.step.decode_valid.size() == static_cast<size_t>(c.step.num_decode_tokens));
  RC_ASSERT(total_errors(reference_outputs(c)) == 0);  // throws if invalid
  if (c.persistent) {  // and their persistent buffers are valid and clean under run-time sizes
    const auto [errors, status] = persistent_reference(c);
    RC_ASSERT(errors == 0);
    RC_ASSERT(status == ref::MetadataCheck::kNone);
  }
}

RC_GTEST_PROP(Generators, CorruptedStepsPassValidationAndCarryContentErrors, ()) {
  const StepCase c = *gen_corrupted_step_case(ScheduleChoice::kAny, small_steps());
  RC_ASSERT(!c.notes.empty());
  RC_ASSERT(total_errors(reference_outputs(c)) > 0);
}

// What a few hundred drawn cases contain: every feature the generators promise appears.
TEST(Generators, CoverTheSpace) {
  std::map<std::string, int> seen;
  auto count = [&seen](const std::string& feature, bool present) {
    seen[feature] += present ? 1 : 0;
  };
  const rc::Gen<StepCase> gen = gen_step_case(ScheduleChoice::kAny, StepLimits{});
  for (int i = 0; i < 600; ++i) {
    const StepCase c = draw(gen, 1000 + static_cast<uint64_t>(i), i % 101);
    const ref::Step& s = c.step;
    const int32_t T = s.num_tokens(), D = s.num_decode_tokens, R = s.num_requests();
    count("empty step", T == 0);
    count("single-token step", T == 1);
    bool speculative = false, chunked = false;
    int32_t max_pos = -1;
    for (int32_t r = 0; r < R; ++r) {
      const int32_t q = s.query_start_loc(r + 1) - s.query_start_loc(r);
      if (s.query_start_loc(r) < D && q > 1) speculative = true;
      if (s.query_start_loc(r) >= D && s.seq_lens(r) > q) chunked = true;
      max_pos = std::max(max_pos, s.seq_lens(r) - 1);
    }
    count("speculative decode", speculative);
    count("chunked prefill", chunked);
    count("decode and prefill", D > 0 && D < T);
    count("padding token",
          std::find(s.decode_valid.begin(), s.decode_valid.end(), 0) != s.decode_valid.end());
    count("production blocks", s.swa.block_size == 64 && s.c4a.block_size == 64 && s.c128a.block_size == 2);
    count("odd swa block", s.swa.block_size != 64);
    count("odd c4a block", s.c4a.block_size != 64);
    count("odd c128a block", s.c128a.block_size != 2);
    count("window 128", c.schedule.window == 128);
    count("window not a multiple of 4", c.schedule.window % 4 != 0);
    count("window 1", c.schedule.window == 1);
    count("flash", c.schedule.name == ref::deepseek_v4_flash().name);
    count("pro", c.schedule.name == ref::deepseek_v4_pro().name);
    count("random schedule", c.schedule.name == "random");
    for (int32_t ratio : {0, 1, 4, 128}) {
      count("random schedule with ratio " + std::to_string(ratio),
            c.schedule.name == "random" &&
                std::count(c.schedule.compress_ratios.begin(), c.schedule.compress_ratios.end(), ratio) > 0);
    }
    count("schedule without layers", c.schedule.num_layers() == 0);
    bool width_odd = false, width_0 = false, width_1 = false, padded_picks = false;
    for (size_t l = 0; l < c.c4a_per_layer.size(); ++l) {
      if (c.schedule.compress_ratios[l] != 4) continue;
      const auto K = c.c4a_per_layer[l].prefill_topk.cols();
      width_odd |= K % 4 != 0;
      width_0 |= K == 0;
      width_1 |= K == 1;
      padded_picks |= (c.c4a_per_layer[l].prefill_topk.array() == -1).any() &&
                      (c.c4a_per_layer[l].prefill_topk.array() >= 0).any();
    }
    count("C4A width not a multiple of 4", width_odd);
    count("C4A width 0", width_0);
    count("C4A width 1", width_1);
    count("C4A picks padded with -1", padded_picks);
    const int32_t natural = (std::max((max_pos + 1) / 128, 1) + 127) / 128 * 128;
    count("C128A width above 128", T > 0 && ref::c128a_effective_width(max_pos, s.max_model_len) > 128);
    count("C128A effective-width cap binds",
          T > 0 && ref::c128a_effective_width(max_pos, s.max_model_len) < natural);
    bool tail = false;
    for (int32_t r = 0; r < R; ++r)
      tail |= static_cast<int64_t>(s.swa.block_table.cols() - 1) * s.swa.block_size >= s.seq_lens(r);
    count("unused tail entries", tail);

    const StepLayout& l = c.layout;
    count("dense layout", describe(l) == "dense");
    count("decode_swa_indices strided", l.decode_swa_indices.row_padding > 0);
    count("c128a_decode_global strided", l.c128a_decode_global.row_padding > 0);
    count("c128a_prefill_local strided", l.c128a_prefill_local.row_padding > 0);
    count("decode_swa_indices misaligned", l.decode_swa_indices.misalign > 0);
    bool c4a_strided = false, c4a_misaligned = false, own_topk = false;
    for (size_t layer = 0; layer < l.c4a_decode_local.size(); ++layer) {
      c4a_strided |= l.c4a_decode_local[layer].row_padding > 0 && l.c4a_prefill_topk[layer].row_padding > 0;
      c4a_misaligned |= l.c4a_prefill_topk[layer].misalign > 0;
      own_topk |= l.c4a_topk[layer] >= 0 && l.c4a_topk[layer] != c.schedule.c4a_topk;
    }
    count("C4A inputs strided", c4a_strided);
    count("C4A inputs misaligned", c4a_misaligned);
    count("a C4A layer with its own top-k", own_topk);
    count("no decode_valid", l.drop_decode_valid);
    count("no C128A decode lens", l.drop_c128a_decode_lens);
    count("C4A through the SWA table", l.drop_c4a_table);
    count("C128A through the SWA table", l.drop_c128a_table);
    count("block tables strided", l.swa_table.row_padding > 0 && l.c4a_table.row_padding > 0);
    count("block tables with rows past R", l.c128a_table.extra_rows > 0);

    // SPEC §7 engine layouts.
    for (const auto& [name, cache] : {std::pair<std::string, const ref::PagedCache*>{"swa", &s.swa},
                                      {"c4a", &s.c4a},
                                      {"c128a", &s.c128a}}) {
      count(name + " block span above its block size", cache->span() > cache->block_size);
      count(name + " base offset", cache->base_offset > 0);
    }
    bool near_int32 = false, wide_span = false;
    for (const ref::PagedCache* cache : {&s.swa, &s.c4a, &s.c128a}) {
      const int64_t top = cache->block_table.size() > 0 ? std::max<int64_t>(cache->block_table.maxCoeff(), 0) : 0;
      near_int32 |= top > 0 && int64_t{cache->base_offset} + top * cache->span() + cache->block_size - 1 > INT32_MAX - 64;
      wide_span |= cache->span() >= (1 << 20);
    }
    count("a slot within 64 of 2^31 - 1", near_int32);
    count("a block span of 2^20 or more (64-bit products)", wide_span);
    count("persistent buffers", c.persistent.has_value());
    if (c.persistent) {
      const PersistentStep& p = *c.persistent;
      count("padded rows past T", p.token_capacity() > T);
      count("decode rows past D", p.decode_capacity > D);
      count("prefill rows past T - D", p.prefill_capacity > T - D);
      count("requests past R", p.request_capacity() > R);
      count("C128A capacity above E", p.c128a_capacity > ref::c128a_effective_width(max_pos, s.max_model_len));
      count("caller-owned output rows padded", p.output_row_padding > 0);
      count("block tables with rows past R_cap", s.swa.block_table.rows() > p.request_capacity());
      count("sentinel request ids", (p.token_to_req.tail(p.token_capacity() - T).array() == -1).all() &&
                                        p.token_capacity() > T);
    }
  }
  for (const auto& [feature, n] : seen) {
    EXPECT_GT(n, 0) << "no drawn case has: " << feature;
    RecordProperty(feature, n);
  }
}

// Corrupted steps reach the SPEC §7 content-error and metadata paths too.
TEST(Generators, CorruptedStepsCoverSpec7) {
  std::map<std::string, int> seen;
  const rc::Gen<StepCase> gen = gen_corrupted_step_case(ScheduleChoice::kAny, StepLimits{});
  for (int i = 0; i < 300; ++i) {
    const StepCase c = draw(gen, 7000 + static_cast<uint64_t>(i), i % 101);
    bool offset = false, metadata = false;
    for (const std::string& note : c.notes) {
      offset |= note.find("base offset") != std::string::npos;
      metadata |= note.find("(persistent buffer)") != std::string::npos || note.find("(run-time size)") != std::string::npos;
    }
    seen["a base offset past 2^31 or below 0"] += offset;
    seen["persistent buffers"] += c.persistent.has_value();
    seen["broken metadata in persistent buffers"] += metadata;
    if (metadata) {
      const auto [errors, status] = persistent_reference(c);
      seen["broken metadata the reference's checks report"] += status != ref::MetadataCheck::kNone;
      (void)errors;
    }
  }
  for (const auto& [feature, n] : seen) EXPECT_GT(n, 0) << "no drawn corrupted case has: " << feature;
}

RC_GTEST_PROP(Generators, EngineBuildsWithoutCorruptionHaveNoContentErrors, ()) {
  BuildLimits valid;
  valid.corrupt = false;
  const ref::BuilderInputs in = *gen_engine_builder_inputs(valid);
  RC_LOG() << describe(in);
  RC_ASSERT(ref::build_mixed_sparse_indices(in).content_errors == 0);  // throws if invalid
}

RC_GTEST_PROP(Generators, PersistentBuildsAreValidUnlessBroken, ()) {
  const PersistentBuildCase valid = *gen_persistent_build();
  RC_ASSERT(valid.corruption.empty());
  const ref::CheckedBuild b = ref::build_mixed_sparse_indices(valid.build.inputs, valid.build.sizes);
  RC_ASSERT(b.status.check == ref::MetadataCheck::kNone);
  RC_ASSERT(b.output.content_errors == 0);
  RC_ASSERT(!(*gen_persistent_build({}, true)).corruption.empty());
}

// The SPEC §7 builds below the step level: spans, offsets (past 2^31 too), persistent tables,
// capacities.
TEST(Generators, CoverTheEngineBuildSpace) {
  std::map<std::string, int> seen;
  int broken_reported = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const ref::BuilderInputs in = draw(gen_engine_builder_inputs(), seed);
    for (const ref::PagedCache* cache : {&in.swa, in.compressed ? &*in.compressed : nullptr}) {
      if (cache == nullptr) continue;
      const int64_t top = cache->block_table.size() > 0 ? std::max<int64_t>(cache->block_table.maxCoeff(), 0) : 0;
      seen["block span above the block size"] += cache->span() > cache->block_size;
      seen["base offset"] += cache->base_offset > 0;
      seen["negative base offset"] += cache->base_offset < 0;
      seen["slots past 2^31 by the offset"] +=
          cache->base_offset > 0 && top < (1 << 30) && int64_t{cache->base_offset} + top * cache->span() > INT32_MAX;
      seen["block table rows past R"] += cache->block_table.rows() > in.seq_lens.size();
    }
    seen["row capacity past T"] += in.row_capacity.value_or(0) > in.token_to_req.size();
    seen["compressed capacity"] += in.compressed_capacity.has_value();
    seen["compressed capacity not a multiple of 4"] += in.compressed_capacity.value_or(0) % 4 != 0;
    seen["content errors"] += ref::build_mixed_sparse_indices(in).content_errors > 0;
    const PersistentBuildCase broken = draw(gen_persistent_build({}, true), seed);
    broken_reported += ref::check_metadata(broken.build.inputs, broken.build.sizes).check != ref::MetadataCheck::kNone;
    const PersistentBuildCase valid = draw(gen_persistent_build(), seed);
    seen["persistent build with padded rows"] += valid.build.sizes.num_tokens < valid.build.inputs.token_to_req.size();
    seen["persistent build with requests past R"] += valid.build.sizes.num_requests < valid.build.inputs.seq_lens.size();
  }
  for (const auto& [feature, n] : seen) EXPECT_GT(n, 0) << "no drawn build has: " << feature;
  EXPECT_GT(broken_reported, 200) << "most broken metadata is a structural error";
}

// The builds below the step level (builder and cache tests) and their layouts.
TEST(Generators, CoverTheBuildSpace) {
  std::map<std::string, int> seen;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const ref::BuilderInputs in = draw(gen_builder_inputs(), seed);
    const RequestLayout l = draw(gen_request_layout(), seed);
    const Eigen::Index kd = in.decode_compressed.cols();
    seen["ratio 2 or 3"] += in.ratio == 2 || in.ratio == 3;
    seen["window not a multiple of 4"] += in.window % 4 != 0;
    seen["global decode with lens"] += !in.decode_local && in.decode_compressed_lens.has_value() && kd > 0;
    seen["global decode without lens"] += !in.decode_local && !in.decode_compressed_lens && kd > 0;
    seen["local decode with decode_valid"] += in.decode_local && in.decode_valid.has_value() && kd > 0;
    seen["local decode without decode_valid"] += in.decode_local && !in.decode_valid && kd > 0;
    seen["no compressed table"] += !in.compressed;
    seen["Kd above topk"] += kd > in.topk;
    seen["Kp above topk"] += in.prefill_topk.cols() > in.topk;
    seen["dense layout"] += l.decode_swa_indices.row_padding == 0 && l.prefill_topk.row_padding == 0 &&
                            l.decode_compressed.row_padding == 0 && l.prefill_topk.misalign == 0;
    seen["matrices strided differently"] += l.decode_swa_indices.row_padding != l.prefill_topk.row_padding;
    seen["one matrix misaligned, another not"] += (l.decode_compressed.misalign == 0) != (l.prefill_topk.misalign == 0);
    seen["block tables strided"] += l.table_row_padding > 0;
    seen["caller-owned output"] += l.caller_output;
  }
  for (const auto& [feature, n] : seen) EXPECT_GT(n, 0) << "no drawn build has: " << feature;
}

TEST(Generators, SameSeedAndSizeDrawTheSameCase) {
  const rc::Gen<StepCase> gen = gen_step_case(ScheduleChoice::kRandom, StepLimits{});
  const StepCase a = draw(gen, 42, 60), b = draw(gen, 42, 60);
  EXPECT_EQ(describe(a), describe(b));
  EXPECT_EQ(a.step.swa.block_table, b.step.swa.block_table);
  EXPECT_EQ(a.step.seq_lens, b.step.seq_lens);
}

TEST(Generators, SizeZeroDrawsAtMostOneTokenOfShortContext) {
  const rc::Gen<StepCase> gen = gen_step_case(ScheduleChoice::kAny, StepLimits{});
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const StepCase c = draw(gen, seed, 0);
    EXPECT_LE(c.step.num_tokens(), 1);
    for (int32_t r = 0; r < c.step.num_requests(); ++r) EXPECT_LE(c.step.seq_lens(r), 17);
  }
}

// A property that fails on every step of 3 or more tokens must shrink to a step of exactly
// 3 tokens, no prior context and no layers: the generators shrink toward small steps.
TEST(Generators, ShrinkTowardSmallSteps) {
  std::optional<StepCase> last_failure;
  rc::detail::TestParams params;
  params.seed = 7;
  params.maxSuccess = 200;
  const auto result = rc::detail::checkTestable(
      [&] {
        const StepCase c = *gen_step_case(ScheduleChoice::kRandom, StepLimits{});
        if (c.step.num_tokens() >= 3) {
          last_failure = c;
          RC_FAIL("three tokens or more");
        }
      },
      rc::detail::TestMetadata{}, params);
  ASSERT_TRUE(result.is<rc::detail::FailureResult>());
  ASSERT_TRUE(last_failure.has_value());
  const StepCase& c = *last_failure;
  EXPECT_EQ(c.step.num_tokens(), 3) << describe(c);
  EXPECT_EQ(c.schedule.num_layers(), 0) << describe(c);
  for (int32_t r = 0; r < c.step.num_requests(); ++r) {
    EXPECT_EQ(c.step.seq_lens(r), c.step.query_start_loc(r + 1) - c.step.query_start_loc(r))
        << "request " << r << " kept prior context: " << describe(c);
  }
}

}  // namespace
}  // namespace dsv4::harness
