#include "harness/input_layout.h"

#include <sstream>

namespace dsv4::harness {
namespace {

void describe_matrix(std::ostringstream& os, const std::string& name, const MatrixLayout& m) {
  if (m.row_padding != 0) os << "; " << name << " row padding " << m.row_padding;
  if (m.misalign != 0) os << "; " << name << " misaligned by " << m.misalign;
}

void describe_table(std::ostringstream& os, const std::string& name, const TableLayout& t) {
  if (t.row_padding != 0) os << "; " << name << " row padding " << t.row_padding;
  if (t.extra_rows != 0) os << "; " << name << " " << t.extra_rows << " rows past R";
}

}  // namespace

RequestLayout same_layout(MatrixLayout every_matrix) { return {every_matrix, every_matrix, every_matrix}; }

std::string describe(const RequestLayout& layout) {
  std::ostringstream os;
  describe_matrix(os, "decode_swa_indices", layout.decode_swa_indices);
  describe_matrix(os, "decode_compressed", layout.decode_compressed);
  describe_matrix(os, "prefill_topk", layout.prefill_topk);
  if (layout.table_row_padding != 0) os << "; block-table row padding " << layout.table_row_padding;
  if (layout.caller_output) os << "; caller-owned output, row padding " << layout.output_row_padding;
  const std::string s = os.str();
  return s.empty() ? "dense" : s.substr(2);
}

MatrixLayout layer_entry(const std::vector<MatrixLayout>& by_layer, int32_t layer) {
  return static_cast<size_t>(layer) < by_layer.size() ? by_layer[static_cast<size_t>(layer)] : MatrixLayout{};
}

int32_t c4a_topk(const StepLayout& layout, int32_t layer, int32_t schedule_topk) {
  const auto l = static_cast<size_t>(layer);
  return l < layout.c4a_topk.size() && layout.c4a_topk[l] >= 0 ? layout.c4a_topk[l] : schedule_topk;
}

int32_t c4a_source(const StepLayout& layout, int32_t layer) {
  const auto l = static_cast<size_t>(layer);
  return l < layout.c4a_source.size() && layout.c4a_source[l] >= 0 ? layout.c4a_source[l] : -1;
}

void apply_layout(const StepLayout& layout, int32_t layer, ref::BuilderInputs& in) {
  if (in.ratio == 4) {
    in.topk = c4a_topk(layout, layer, in.topk);
    if (layout.drop_decode_valid) in.decode_valid.reset();
    if (layout.drop_c4a_table) in.compressed.reset();
  } else if (in.ratio == 128) {
    if (layout.drop_c128a_decode_lens) in.decode_compressed_lens.reset();
    if (layout.drop_c128a_table) in.compressed.reset();
  }
}

std::string describe(const StepLayout& layout) {
  std::ostringstream os;
  describe_matrix(os, "decode_swa_indices", layout.decode_swa_indices);
  describe_matrix(os, "c128a_decode_global", layout.c128a_decode_global);
  describe_matrix(os, "c128a_prefill_local", layout.c128a_prefill_local);
  describe_table(os, "swa_block_table", layout.swa_table);
  describe_table(os, "c4a_block_table", layout.c4a_table);
  describe_table(os, "c128a_block_table", layout.c128a_table);
  for (size_t l = 0; l < layout.c4a_decode_local.size(); ++l)
    describe_matrix(os, "layer " + std::to_string(l) + " decode_local", layout.c4a_decode_local[l]);
  for (size_t l = 0; l < layout.c4a_prefill_topk.size(); ++l)
    describe_matrix(os, "layer " + std::to_string(l) + " prefill_topk", layout.c4a_prefill_topk[l]);
  for (size_t l = 0; l < layout.c4a_topk.size(); ++l)
    if (layout.c4a_topk[l] >= 0) os << "; layer " << l << " top-k " << layout.c4a_topk[l];
  for (size_t l = 0; l < layout.c4a_source.size(); ++l)
    if (layout.c4a_source[l] >= 0) os << "; layer " << l << " index source " << layout.c4a_source[l];
  if (layout.drop_decode_valid) os << "; no decode_valid";
  if (layout.drop_c128a_decode_lens) os << "; no C128A decode lens";
  if (layout.drop_c4a_table) os << "; C4A through the SWA table";
  if (layout.drop_c128a_table) os << "; C128A through the SWA table";
  const std::string s = os.str();
  return s.empty() ? "dense" : s.substr(2);
}

}  // namespace dsv4::harness
