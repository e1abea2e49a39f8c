#include "harness/step_case.h"

#include <ostream>
#include <sstream>

namespace dsv4::harness {
namespace {

std::string ratios_text(const ref::ModelSchedule& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.compress_ratios.size(); ++i) os << (i ? "," : "") << s.compress_ratios[i];
  os << "]";
  return os.str();
}

void print_matrix(std::ostream& os, const char* name, const ref::IndexMatrix& m) {
  os << "  " << name << " (" << m.rows() << " x " << m.cols() << ")";
  // Small tensors in full: a shrunk counterexample is small and wants to be read.
  if (m.size() > 256) {
    os << " [too large to print]\n";
    return;
  }
  os << ":\n";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    os << "    ";
    for (Eigen::Index c = 0; c < m.cols(); ++c) os << (c ? " " : "") << m(r, c);
    os << "\n";
  }
}

// "64x3" or, with SPEC §7 addressing, "64x3 span 70 offset 1000".
std::string cache_text(const ref::PagedCache& cache) {
  std::ostringstream os;
  os << cache.block_size << "x" << cache.block_table.cols();
  if (cache.block_span) os << " span " << *cache.block_span;
  if (cache.base_offset != 0) os << " offset " << cache.base_offset;
  return os.str();
}

}  // namespace

std::string describe(const PersistentStep& p) {
  std::ostringstream os;
  os << "persistent buffers: T_cap " << p.token_capacity() << " D_cap " << p.decode_capacity << " R_cap "
     << p.request_capacity() << " prefill rows " << p.prefill_capacity << " C128A P_cap " << p.c128a_capacity
     << " output row padding " << p.output_row_padding << ", run-time sizes T " << p.sizes.num_tokens << " D "
     << p.sizes.num_decode_tokens << " R " << p.sizes.num_requests;
  return os.str();
}

std::string describe(const StepCase& c) {
  const ref::Step& s = c.step;
  std::ostringstream os;
  os << "schedule " << c.schedule.name << " (" << c.schedule.num_layers() << " layers: "
     << c.schedule.count(ref::LayerKind::kSwaOnly) << " SWA-only, "
     << c.schedule.count(ref::LayerKind::kC4A) << " C4A, "
     << c.schedule.count(ref::LayerKind::kC128A) << " C128A) window " << c.schedule.window
     << " c4a_topk " << c.schedule.c4a_topk << "; R " << s.num_requests() << " T "
     << s.num_tokens() << " D " << s.num_decode_tokens << "; blocks swa " << cache_text(s.swa) << " c4a "
     << cache_text(s.c4a) << " c128a " << cache_text(s.c128a) << "; max_model_len " << s.max_model_len
     << "; layout " << describe(c.layout);
  if (c.persistent) os << "; " << describe(*c.persistent);
  return os.str();
}

std::vector<ref::BuilderOutput> reference_outputs(const StepCase& c) {
  return ref::run_step_uncached(c.step, c.schedule, c.c4a_per_layer,
                                [&c](int32_t layer, ref::BuilderInputs& in) { apply_layout(c.layout, layer, in); });
}

void showValue(const StepCase& c, std::ostream& os) {
  const ref::Step& s = c.step;
  os << describe(c) << "\n  ratios " << ratios_text(c.schedule) << "\n";
  for (const std::string& note : c.notes) os << "  note: " << note << "\n";
  for (int32_t r = 0; r < s.num_requests(); ++r) {
    const int32_t q = s.query_start_loc(r + 1) - s.query_start_loc(r);
    const bool decode = s.query_start_loc(r) < s.num_decode_tokens;
    os << "  request " << r << ": " << (decode ? "decode" : "prefill") << " tokens "
       << s.query_start_loc(r) << ".." << s.query_start_loc(r + 1) - 1 << " (" << q
       << ") seq_len " << s.seq_lens(r) << "\n";
  }
  if (!s.decode_valid.empty()) {
    os << "  decode_valid";
    for (uint8_t v : s.decode_valid) os << " " << static_cast<int>(v);
    os << "\n";
  }
  print_matrix(os, "swa_block_table", s.swa.block_table);
  print_matrix(os, "c4a_block_table", s.c4a.block_table);
  print_matrix(os, "c128a_block_table", s.c128a.block_table);
  for (size_t l = 0; l < c.c4a_per_layer.size(); ++l) {
    const ref::C4aIndexerOutput& o = c.c4a_per_layer[l];
    if (o.decode_local.size() == 0 && o.prefill_topk.size() == 0 && o.decode_local.cols() == 0 &&
        o.prefill_topk.cols() == 0)
      continue;
    os << "  layer " << l << " C4A indexer output:\n";
    print_matrix(os, "decode_local", o.decode_local);
    print_matrix(os, "prefill_topk", o.prefill_topk);
  }
}

}  // namespace dsv4::harness
