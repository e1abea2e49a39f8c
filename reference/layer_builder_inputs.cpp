// Per-layer builder inputs (SPEC §6) and the uncached step: one build per layer.
#include <optional>

#include "reference/model_schedule.h"
#include "reference/step_structure.h"

namespace dsv4::ref {

namespace {

// The per-step metadata an engine computes once and every layer of its kind reads.
struct StepMetadata {
  IndexMatrix decode_swa;               // D x W
  std::optional<C128aMetadata> c128a;   // only when some layer is C128A
};

StepMetadata step_metadata(const Step& step, const ModelSchedule& schedule, bool with_c128a) {
  StepMetadata meta;
  meta.decode_swa = decode_swa_indices(step, schedule.window);
  if (with_c128a) meta.c128a = c128a_metadata(step);
  return meta;
}

LayerKind kind_of(const ModelSchedule& schedule, int32_t layer) {
  if (layer < 0 || layer >= schedule.num_layers()) {
    reject("layer = " + std::to_string(layer) + ": outside [0, " +
           std::to_string(schedule.num_layers()) + ") of schedule " + schedule.name);
  }
  return layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(layer)]);
}

BuilderInputs inputs_for_layer(const Step& step, const ModelSchedule& schedule, int32_t layer,
                               const C4aIndexerOutput* c4a, const StepMetadata& meta) {
  const int32_t D = step.num_decode_tokens;
  const int32_t prefill_tokens = step.num_tokens() - D;
  BuilderInputs in;
  in.window = schedule.window;
  in.decode_swa_indices = meta.decode_swa;
  in.query_start_loc = step.query_start_loc;
  in.seq_lens = step.seq_lens;
  in.token_to_req = step.token_to_req;
  in.swa = step.swa;
  switch (kind_of(schedule, layer)) {
    case LayerKind::kSwaOnly:
      in.ratio = 1;  // a config ratio of 0 names the same kind; the builder never divides by 0
      in.topk = 0;
      in.prefill_topk = IndexMatrix(prefill_tokens, 0);
      break;
    case LayerKind::kC128A:
      in.ratio = 128;
      in.topk = meta.c128a->effective_width;
      in.decode_compressed = meta.c128a->decode_global;
      in.decode_local = false;
      in.decode_compressed_lens = meta.c128a->decode_lens;
      in.prefill_topk = meta.c128a->prefill_local;
      in.compressed = step.c128a;
      break;
    case LayerKind::kC4A:
      if (c4a == nullptr) {
        reject("layer " + std::to_string(layer) + " is C4A but c4a (its indexer output) is null");
      }
      in.ratio = 4;
      in.topk = schedule.c4a_topk;
      in.decode_compressed = c4a->decode_local;
      in.decode_local = true;
      in.decode_valid = step.decode_valid.empty() ? std::vector<uint8_t>(static_cast<size_t>(D), 1)
                                                  : step.decode_valid;
      in.prefill_topk = c4a->prefill_topk;
      in.compressed = step.c4a;
      break;
  }
  return in;
}

}  // namespace

BuilderInputs layer_builder_inputs(const Step& step, const ModelSchedule& schedule, int32_t layer,
                                   const C4aIndexerOutput* c4a) {
  const bool c128a = kind_of(schedule, layer) == LayerKind::kC128A;
  return inputs_for_layer(step, schedule, layer, c4a, step_metadata(step, schedule, c128a));
}

// The metadata is computed once per step (as an engine does); the builds are not shared.
std::vector<BuilderOutput> run_step_uncached(const Step& step, const ModelSchedule& schedule,
                                             const std::vector<C4aIndexerOutput>& c4a_per_layer,
                                             const LayerInputsEdit& edit) {
  if (c4a_per_layer.size() != static_cast<size_t>(schedule.num_layers())) {
    reject("c4a_per_layer has size " + std::to_string(c4a_per_layer.size()) +
           ", expected one per layer: " + std::to_string(schedule.num_layers()) + " layers");
  }
  const StepMetadata meta = step_metadata(step, schedule, schedule.count(LayerKind::kC128A) > 0);
  std::vector<BuilderOutput> outputs;
  outputs.reserve(c4a_per_layer.size());
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    const C4aIndexerOutput* c4a = &c4a_per_layer[static_cast<size_t>(layer)];
    BuilderInputs in = inputs_for_layer(step, schedule, layer, c4a, meta);
    if (edit) edit(layer, in);
    outputs.push_back(build_mixed_sparse_indices(in));
  }
  return outputs;
}

}  // namespace dsv4::ref
