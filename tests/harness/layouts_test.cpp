// Input layouts (SPEC §7's persistent buffers, optional inputs left out, per-layer shapes) at
// the per-layer entry point, on every backend: every matrix input strided and misaligned at
// once with every optional input dropped and each C4A layer on its own top-k agrees with the
// reference; a layer whose inputs have another shape than the step's is rejected exactly when
// the reference rejects its build, before anything is built.
#include <gtest/gtest.h>

#include "harness/backend_step.h"
#include "harness/counting_builder.h"
#include "optimized/step_indexer.h"
#include "property_util.h"
#include "support/backend_test.h"

namespace dsv4::harness {
namespace {

using testing::small_steps;

using Layouts = testing::BackendTest;
DSV4_ON_EVERY_BACKEND(Layouts);

MatrixLayout strided() {
  return MatrixLayout{*rc::gen::inRange<int32_t>(1, 9), *rc::gen::inRange<int32_t>(0, 4)};
}

TEST_P(Layouts, EveryMatrixStridedEveryOptionalInputDroppedEachC4aLayerItsOwnTopk) {
  testing::check_property([this] {
    StepCase c = *gen_step_case(ScheduleChoice::kAny, small_steps());
    StepLayout& l = c.layout;
    l = StepLayout{};
    l.swa_table = l.c4a_table = l.c128a_table = TableLayout{*rc::gen::inRange<int32_t>(1, 9), *rc::gen::inRange<int32_t>(0, 4)};
    l.decode_swa_indices = strided();
    l.c128a_decode_global = strided();
    l.c128a_prefill_local = strided();
    for (int32_t ratio : c.schedule.compress_ratios) {
      l.c4a_decode_local.push_back(strided());
      l.c4a_prefill_topk.push_back(strided());
      l.c4a_topk.push_back(ratio == 4 ? *rc::gen::inRange<int32_t>(0, 2 * c.schedule.c4a_topk + 9) : -1);
    }
    l.drop_decode_valid = l.drop_c128a_decode_lens = l.drop_c4a_table = l.drop_c128a_table = true;
    DSV4_RC_ASSERT_AGREES(differential_check(c, on_this_backend(), testing::kReplayHint));
  });
}

// One C4A layer's indexer output with a row added or removed: the per-layer entry point
// throws std::invalid_argument naming the matrix exactly when the reference rejects the
// layer's build, and nothing is built.
void mismatched_layer_shape_is_rejected(opt::MixedSparseIndicesBuilder& inner) {
  StepCase c = *gen_step_case(ScheduleChoice::kAny, small_steps());
  if (c.schedule.count(ref::LayerKind::kC4A) == 0) c.schedule.compress_ratios.push_back(4);
  c.c4a_per_layer = *gen_c4a_outputs(c.step, c.schedule, 1);  // widths >= 1: no "absent" matrix
  int32_t layer = 0;
  while (c.schedule.compress_ratios[static_cast<size_t>(layer)] != 4) ++layer;
  ref::C4aIndexerOutput& out = c.c4a_per_layer[static_cast<size_t>(layer)];
  ref::IndexMatrix& m = *rc::gen::arbitrary<bool>() ? out.decode_local : out.prefill_topk;
  const bool add = m.rows() == 0 || *rc::gen::arbitrary<bool>();
  m.conservativeResize(m.rows() + (add ? 1 : -1), Eigen::NoChange);
  if (add) m.bottomRows(1).setConstant(-1);
  RC_TAG(add ? "row added" : "row removed", &m == &out.decode_local ? "decode_local" : "prefill_topk");

  bool reference_rejects = false;
  try {
    ref::validate_builder_inputs(ref::layer_builder_inputs(c.step, c.schedule, layer, &out));
  } catch (const std::invalid_argument&) {
    reference_rejects = true;
  }
  const BackendStep staged(inner.backend(), c.step, c.schedule, c.c4a_per_layer);
  CountingBuilder builder(inner);
  opt::StepIndexer indexer(builder, staged.inputs());
  bool rejected = false;
  try {
    indexer.layer_indices(4, staged.c4a(layer));
  } catch (const std::invalid_argument& e) {
    rejected = true;
    const std::string message = e.what();
    RC_ASSERT(message.find(&m == &out.decode_local ? "decode_compressed" : "prefill_topk") != std::string::npos);
  }
  RC_ASSERT(rejected == reference_rejects);
  if (rejected) RC_ASSERT(builder.build_calls() == 0);
  indexer.end_step();
}

TEST_P(Layouts, ALayerWhoseInputsDifferInShapeFromTheStepIsRejectedLikeTheReference) {
  testing::check_property([this] { mismatched_layer_shape_is_rejected(builder()); });
}

}  // namespace
}  // namespace dsv4::harness
