#include "harness/mismatch.h"

#include <sstream>

namespace dsv4::harness {

std::string format_mismatch(const Mismatch& m) {
  std::ostringstream os;
  os << "[" << m.backend << (m.path.empty() ? "" : " ") << m.path << "]";
  if (m.layer >= 0) os << " layer " << m.layer << " (" << m.kind << ")";
  os << " " << m.what << ":";
  if (m.token >= 0) {
    os << " token " << m.token << " (";
    if (m.request >= 0) os << "request " << m.request << ", ";
    os << (m.decode_token ? "decode" : "prefill");
    if (m.position >= 0) os << ", position " << m.position;
    os << ")";
  }
  if (m.column >= 0) {
    os << ", column " << m.column;
    if (m.column < m.window) {
      os << " (window part, c = " << m.column << ")";
    } else {
      os << " (compressed part, j = " << m.column - m.window << ")";
    }
  }
  if (m.what == "builder calls") {
    os << " expected " << m.expected << ", counted " << m.actual;
  } else if (m.what == "sparse_indices" || m.what == "sparse_lens" || m.what == "content errors") {
    os << (m.token >= 0 ? ": " : " ") << "reference " << m.expected << ", optimized " << m.actual;
  }
  if (m.differing > 0) os << " (" << m.differing << " of " << m.total << " elements differ)";
  if (!m.detail.empty()) os << " " << m.detail;
  return os.str();
}

}  // namespace dsv4::harness
