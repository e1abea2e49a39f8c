// The generators: what they draw is structurally valid and (for valid steps) free of content
// errors, covers the SPEC §6 space the brief lists, scales with RapidCheck's size, and
// shrinks toward small steps.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <optional>

#include "harness/generators.h"
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

RC_GTEST_PROP(Generators, ValidStepsPassValidationWithoutContentErrors, ()) {
  const StepCase c = *gen_step_case(ScheduleChoice::kAny, small_steps());
  RC_ASSERT(c.c4a_per_layer.size() == c.schedule.compress_ratios.size());
  RC_ASSERT(c.step.decode_valid.empty() ||
            c.step.decode_valid.size() == static_cast<size_t>(c.step.num_decode_tokens));
  RC_ASSERT(total_errors(reference_outputs(c)) == 0);  // throws if invalid
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
  }
  for (const auto& [feature, n] : seen) {
    EXPECT_GT(n, 0) << "no drawn case has: " << feature;
    RecordProperty(feature, n);
  }
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
