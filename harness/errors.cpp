#include "harness/errors.h"

namespace dsv4::harness {

std::string printable(const std::string& text, size_t max_chars) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() < max_chars ? text.size() : max_chars);
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace dsv4::harness
