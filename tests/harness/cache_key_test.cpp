// The StepIndexCache's key (SPEC §5): two same-kind layers of one step that differ in exactly
// one key property (window, top-k, decode or prefill width, a block size, a table width,
// the row count) are separate entries, and each gets its own correct output; identical
// inputs staged twice are one entry. A cache key that forgets a property fails here.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <numeric>
#include <ostream>
#include <random>

#include "harness/backend_step.h"
#include "harness/compare_build.h"
#include "harness/counting_builder.h"
#include "harness/staged_request.h"
#include "optimized/step_index_cache.h"
#include "property_util.h"
#include "support/backend_test.h"

namespace dsv4::harness {
namespace {

using testing::small_steps;

using CacheKey = testing::BackendTest;
DSV4_ON_EVERY_BACKEND(CacheKey);

enum class KeyProperty {
  kNone, kWindow, kTopk, kDecodeWidth, kPrefillWidth, kSwaBlockSize, kCompressedBlockSize,
  kSwaBlocksPerRow, kCompressedBlocksPerRow, kRowCount
};

const char* const kPropertyNames[] = {"none (control)", "window", "topk", "decode width",
                                      "prefill width", "swa block size", "compressed block size",
                                      "swa blocks per row", "compressed blocks per row", "row count"};
// RapidCheck prints counterexample values through this.
void showValue(KeyProperty p, std::ostream& os) { os << kPropertyNames[static_cast<int>(p)]; }

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

// The same table width, a larger block size: fresh physical blocks, unused entries -1.
ref::PagedCache reblocked(const ref::PagedCache& cache, const ref::IndexVector& units,
                          int32_t block_size, uint64_t seed) {
  ref::PagedCache out;
  out.block_size = block_size;
  out.block_table = ref::IndexMatrix::Constant(cache.block_table.rows(), cache.block_table.cols(), -1);
  int32_t used = 0;
  for (Eigen::Index r = 0; r < units.size(); ++r) used += ceil_div(units(r), block_size);
  std::vector<int32_t> ids(static_cast<size_t>(used));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  size_t next = 0;
  for (Eigen::Index r = 0; r < units.size(); ++r)
    for (int32_t j = 0; j < ceil_div(units(r), block_size); ++j) out.block_table(r, j) = ids[next++];
  return out;
}

ref::PagedCache widened(const ref::PagedCache& cache, int32_t extra_blocks) {
  ref::PagedCache out = cache;
  out.block_table.conservativeResize(Eigen::NoChange, cache.block_table.cols() + extra_blocks);
  out.block_table.rightCols(extra_blocks).setZero();
  return out;
}

// The step without its last token (and without the last request when that was its only one).
ref::Step without_last_token(const ref::Step& s) {
  ref::Step out = s;
  const int32_t R = s.num_requests(), T = s.num_tokens();
  const int32_t last_q = s.query_start_loc(R) - s.query_start_loc(R - 1);
  if (T - 1 < s.num_decode_tokens) {
    out.num_decode_tokens -= 1;
    if (!out.decode_valid.empty()) out.decode_valid.pop_back();
  }
  out.token_to_req.conservativeResize(T - 1);
  if (last_q > 1) {
    out.query_start_loc(R) -= 1;
    out.seq_lens(R - 1) -= 1;
  } else {
    out.query_start_loc.conservativeResize(R);
    out.seq_lens.conservativeResize(R - 1);
    for (ref::PagedCache* c : {&out.swa, &out.c4a, &out.c128a}) c->block_table.conservativeResize(R - 1, Eigen::NoChange);
  }
  return out;
}

ref::IndexVector c128a_units(const ref::Step& s) {
  ref::IndexVector u(s.num_requests());
  for (int32_t r = 0; r < s.num_requests(); ++r) u(r) = ceil_div(s.seq_lens(r), 128);
  return u;
}

// `built` (downloaded) equals the reference's output, indices and lens (errors are not taken).
void same_output(const ref::BuilderOutput& want, opt::Backend backend, const opt::BuiltIndices& built, int32_t D) {
  for (const Mismatch& m : compare_build(want, download(backend, built), want.content_errors, D, Mismatch{}))
    RC_FAIL(format_mismatch(m));
}

void separate_entries(opt::MixedSparseIndicesBuilder& inner) {
  const StepCase c = *gen_step_case(ScheduleChoice::kRandom, small_steps());
  const bool c128a = *rc::gen::arbitrary<bool>();
  ref::ModelSchedule schedule = c.schedule;
  schedule.compress_ratios = {c128a ? 128 : *rc::gen::element(0, 1)};
  const ref::BuilderInputs base = ref::layer_builder_inputs(c.step, schedule, 0, nullptr);

  KeyProperty property = *rc::gen::element(
      KeyProperty::kNone, KeyProperty::kWindow, KeyProperty::kTopk, KeyProperty::kDecodeWidth,
      KeyProperty::kPrefillWidth, KeyProperty::kSwaBlockSize, KeyProperty::kCompressedBlockSize,
      KeyProperty::kSwaBlocksPerRow, KeyProperty::kCompressedBlocksPerRow, KeyProperty::kRowCount);
  if (!c128a && (property == KeyProperty::kCompressedBlockSize ||
                 property == KeyProperty::kCompressedBlocksPerRow))
    property = KeyProperty::kWindow;  // SWA-only layers have no compressed table
  if (property == KeyProperty::kRowCount && c.step.num_tokens() == 0) property = KeyProperty::kWindow;
  RC_TAG(std::string(kPropertyNames[static_cast<int>(property)]));

  ref::BuilderInputs other = base;
  ref::Step step = c.step;
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  switch (property) {
    case KeyProperty::kNone: break;
    case KeyProperty::kWindow: {
      const int32_t delta = *rc::gen::inRange(1, 9);
      schedule.window = schedule.window > delta && *rc::gen::arbitrary<bool>() ? schedule.window - delta
                                                                              : schedule.window + delta;
      other = ref::layer_builder_inputs(step, schedule, 0, nullptr);
      break;
    }
    case KeyProperty::kTopk: {
      const int32_t delta = *rc::gen::inRange(1, 9);
      other.topk = base.topk >= delta && *rc::gen::arbitrary<bool>() ? base.topk - delta : base.topk + delta;
      break;
    }
    case KeyProperty::kDecodeWidth: {
      const int32_t extra = *rc::gen::inRange(1, 6);
      other.decode_compressed = ref::IndexMatrix::Constant(base.decode_swa_indices.rows(),
                                                           base.decode_compressed.cols() + extra, -1);
      // Only a non-empty block: a 0 x 0 matrix into a D x 0 block trips Eigen's size assertion.
      if (base.decode_compressed.cols() > 0) {
        other.decode_compressed.leftCols(base.decode_compressed.cols()) = base.decode_compressed;
      }
      break;
    }
    case KeyProperty::kPrefillWidth: {
      const auto kp = static_cast<int32_t>(base.prefill_topk.cols());
      if (kp > 0) {  // narrower: entries the layer would read become -1
        other.prefill_topk = base.prefill_topk.leftCols(kp - *rc::gen::inRange(1, kp + 1));
      } else {
        other.prefill_topk = ref::IndexMatrix::Constant(base.prefill_topk.rows(), *rc::gen::inRange(1, 6), -1);
      }
      break;
    }
    case KeyProperty::kSwaBlockSize:
      step.swa = reblocked(step.swa, step.seq_lens, step.swa.block_size + *rc::gen::inRange(1, 65), seed);
      other = ref::layer_builder_inputs(step, schedule, 0, nullptr);
      break;
    case KeyProperty::kCompressedBlockSize:
      step.c128a = reblocked(step.c128a, c128a_units(step), step.c128a.block_size + *rc::gen::inRange(1, 5), seed);
      other = ref::layer_builder_inputs(step, schedule, 0, nullptr);
      break;
    case KeyProperty::kSwaBlocksPerRow:
      step.swa = widened(step.swa, *rc::gen::inRange(1, 4));
      other = ref::layer_builder_inputs(step, schedule, 0, nullptr);
      break;
    case KeyProperty::kCompressedBlocksPerRow:
      step.c128a = widened(step.c128a, *rc::gen::inRange(1, 4));
      other = ref::layer_builder_inputs(step, schedule, 0, nullptr);
      break;
    case KeyProperty::kRowCount:
      step = without_last_token(step);
      other = ref::layer_builder_inputs(step, schedule, 0, nullptr);
      break;
  }

  const ref::BuilderOutput want_base = ref::build_mixed_sparse_indices(base);
  const ref::BuilderOutput want_other = ref::build_mixed_sparse_indices(other);
  const opt::Backend backend = inner.backend();
  const StagedRequest a(backend, base), b(backend, other);
  CountingBuilder builder(inner);
  opt::StepIndexCache cache(builder);
  const opt::LayerKind kind = c128a ? opt::LayerKind::kC128A : opt::LayerKind::kSwaOnly;
  const opt::BuiltIndices x1 = cache.get_or_build(kind, a.request());
  const opt::BuiltIndices y1 = cache.get_or_build(kind, b.request());
  const opt::BuiltIndices x2 = cache.get_or_build(kind, a.request());
  const opt::BuiltIndices y2 = cache.get_or_build(kind, b.request());

  const int64_t entries = property == KeyProperty::kNone ? 1 : 2;
  RC_ASSERT(builder.build_calls() == entries);
  RC_ASSERT(static_cast<int64_t>(cache.entries()) == entries);
  RC_ASSERT(cache.hits() == 4 - entries);
  RC_ASSERT(x2.sparse_indices == x1.sparse_indices);
  RC_ASSERT(y2.sparse_indices == y1.sparse_indices);
  same_output(want_base, backend, x1, static_cast<int32_t>(base.decode_swa_indices.rows()));
  same_output(want_other, backend, y1, static_cast<int32_t>(other.decode_swa_indices.rows()));
  cache.end_step();
}

TEST_P(CacheKey, SameKindLayersDifferingInOneKeyPropertyAreSeparateEntries) {
  testing::check_property([this] { separate_entries(builder()); });
}

}  // namespace
}  // namespace dsv4::harness
