// How staged inputs sit in backend memory besides their values: what the differential checks
// vary so that a path reading one input the way it reads another is caught. Engines keep
// persistent, padded buffers (SPEC §7), leave optional inputs out and give each C4A layer its
// own indexer output; a generated case does all of that (generators.h draws layouts).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference/mixed_sparse_indices.h"

namespace dsv4::harness {

// One matrix input: row_stride = cols + row_padding; the base starts `misalign` int32 past a
// 256-byte boundary (a misaligned base or stride takes the kernels' scalar path).
struct MatrixLayout {
  int32_t row_padding = 0;
  int32_t misalign = 0;
};

// The matrix inputs of one build request.
struct RequestLayout {
  MatrixLayout decode_swa_indices, decode_compressed, prefill_topk;
  // SPEC §7 persistent buffers: block-table rows padded (stride NB + table_row_padding, -77 in
  // the gaps) and caller-owned outputs with rows output_row_padding (a multiple of 4) wider
  // than W + P_cap.
  int32_t table_row_padding = 0;
  bool caller_output = false;
  int32_t output_row_padding = 0;
};
RequestLayout same_layout(MatrixLayout every_matrix);
// "dense" or what the layout changes.
std::string describe(const RequestLayout& layout);

// A block table in a persistent buffer (SPEC §7): rows row_padding apart beyond its width,
// extra_rows rows past R; never read.
struct TableLayout {
  int32_t row_padding = 0;
  int32_t extra_rows = 0;
};

// A whole step staged for the per-layer entry point (harness::BackendStep).
struct StepLayout {
  MatrixLayout decode_swa_indices, c128a_decode_global, c128a_prefill_local;
  TableLayout swa_table, c4a_table, c128a_table;
  std::vector<MatrixLayout> c4a_decode_local, c4a_prefill_topk;  // by layer; missing: dense
  std::vector<int32_t> c4a_topk;  // by layer; missing or < 0: the schedule's c4a_topk
  bool drop_decode_valid = false;       // no decode_valid: every decode token counts its picks
  bool drop_c128a_decode_lens = false;  // C128A decode lengths are then Kd = E
  bool drop_c4a_table = false;          // C4A lookups through the SWA table (SPEC §2)
  bool drop_c128a_table = false;        // C128A lookups through the SWA table
  // SPEC §8 index sources, by layer; missing or < 0: the C4A layer names none. Layers of one
  // source carry the same indexer output (index_sources.h draws them so).
  std::vector<int32_t> c4a_source;
};

// Per-layer entries (MatrixLayout{} and -1 where a vector is short).
MatrixLayout layer_entry(const std::vector<MatrixLayout>& by_layer, int32_t layer);
int32_t c4a_topk(const StepLayout& layout, int32_t layer, int32_t schedule_topk);
int32_t c4a_source(const StepLayout& layout, int32_t layer);  // -1: none

// The reference's inputs of `layer` as `layout` stages them: the dropped inputs left out,
// the layer's own top-k (a ref::LayerInputsEdit).
void apply_layout(const StepLayout& layout, int32_t layer, ref::BuilderInputs& in);

// "dense", or what the layout changes, e.g. "row padding decode_swa_indices 3; no decode_valid".
std::string describe(const StepLayout& layout);

}  // namespace dsv4::harness
