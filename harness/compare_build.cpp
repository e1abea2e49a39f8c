#include "harness/compare_build.h"

#include <sstream>

namespace dsv4::harness {

std::vector<Mismatch> compare_build(const ref::BuilderOutput& want, const HostIndices& got, int64_t got_errors,
                                    int32_t num_decode_tokens, const Mismatch& where) {
  std::vector<Mismatch> found;
  const ref::IndexMatrix& wi = want.sparse_indices;
  const ref::IndexMatrix& gi = got.sparse_indices;
  if (gi.rows() != wi.rows() || gi.cols() != wi.cols() || got.sparse_lens.size() != want.sparse_lens.size()) {
    Mismatch m = where;
    m.what = "shape";
    std::ostringstream os;
    os << "reference sparse_indices " << wi.rows() << " x " << wi.cols() << ", sparse_lens "
       << want.sparse_lens.size() << "; optimized " << gi.rows() << " x " << gi.cols() << ", "
       << got.sparse_lens.size();
    m.detail = os.str();
    found.push_back(m);
  } else {
    Mismatch indices = where, lens = where;  // the first difference of each, and how many
    auto note = [&](Mismatch& m, Eigen::Index t, int64_t expected, int64_t actual) {
      if (m.differing++ > 0) return;
      m.token = static_cast<int32_t>(t);
      m.decode_token = t < num_decode_tokens;
      m.expected = expected;
      m.actual = actual;
    };
    for (Eigen::Index t = 0; t < wi.rows(); ++t) {
      for (Eigen::Index c = 0; c < wi.cols(); ++c) {
        if (wi(t, c) == gi(t, c)) continue;
        if (indices.differing == 0) indices.column = static_cast<int32_t>(c);
        note(indices, t, wi(t, c), gi(t, c));
      }
      if (want.sparse_lens(t) != got.sparse_lens(t)) note(lens, t, want.sparse_lens(t), got.sparse_lens(t));
    }
    indices.what = "sparse_indices";
    indices.total = wi.size();
    lens.what = "sparse_lens";
    lens.total = want.sparse_lens.size();
    for (const Mismatch& m : {indices, lens})
      if (m.differing > 0) found.push_back(m);
  }
  if (got_errors != want.content_errors) {
    Mismatch m = where;
    m.what = "content errors";
    m.expected = want.content_errors;
    m.actual = got_errors;
    found.push_back(m);
  }
  return found;
}

}  // namespace dsv4::harness
