#include "harness/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace dsv4::harness::npy {
namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();

[[noreturn]] void fail(const std::string& label, const std::string& field, const std::string& what) {
  throw std::runtime_error(label + ": field '" + field + "': " + what);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Recursive-descent parser of the header's Python dict literal; accepts only what numpy's
// own writer (and a hand-written equivalent) produces: string keys, a string, a bool and a
// tuple of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& label) : text_(text), label_(label) {}

  Header parse() {
    Header header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_space();
    if (!consume('{')) fail_at("header", "expected '{'");
    skip_space();
    while (!consume('}')) {
      const std::string key = parse_string("header");
      skip_space();
      if (!consume(':')) fail_at("header", "expected ':' after key '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (seen_descr) fail(label_, key, "duplicate key");
        header.descr = parse_string(key);
        seen_descr = true;
      } else if (key == "fortran_order") {
        if (seen_order) fail(label_, key, "duplicate key");
        header.fortran_order = parse_bool(key);
        seen_order = true;
      } else if (key == "shape") {
        if (seen_shape) fail(label_, key, "duplicate key");
        header.shape = parse_shape();
        seen_shape = true;
      } else {
        fail(label_, "header", "unexpected key '" + key + "'");
      }
      skip_space();
      if (consume(',')) {
        skip_space();
      } else if (peek() != '}') {
        fail_at("header", "expected ',' or '}'");
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail_at("header", "unexpected text after the dictionary");
    if (!seen_descr) fail(label_, "descr", "missing");
    if (!seen_order) fail(label_, "fortran_order", "missing");
    if (!seen_shape) fail(label_, "shape", "missing");
    return header;
  }

 private:
  [[noreturn]] void fail_at(const std::string& field, const std::string& what) const {
    fail(label_, field, what + " at header offset " + std::to_string(pos_));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  // A quoted string without escapes (no .npy header field needs one).
  std::string parse_string(const std::string& field) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail_at(field, "expected a quoted string");
    ++pos_;
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail_at(field, "escape sequences are not supported");
      ++pos_;
    }
    if (pos_ == text_.size()) fail_at("header", "unterminated string");
    return text_.substr(start, pos_++ - start);
  }
  bool parse_bool(const std::string& field) {
    for (const char* word : {"True", "False"}) {
      const size_t n = std::strlen(word);
      if (text_.compare(pos_, n, word) == 0) {
        pos_ += n;
        return word[0] == 'T';
      }
    }
    fail_at(field, "expected True or False");
  }
  // "(a, b)", "(a,)", "()"; "(a)" is an int in Python, not a tuple.
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    if (!consume('(')) fail_at("shape", "expected a tuple");
    skip_space();
    bool trailing_comma = false;
    while (!consume(')')) {
      shape.push_back(parse_dimension());
      skip_space();
      trailing_comma = consume(',');
      skip_space();
      if (!trailing_comma && peek() != ')') fail_at("shape", "expected ',' or ')'");
    }
    if (shape.size() == 1 && !trailing_comma) fail(label_, "shape", "(n) is not a tuple, expected (n,)");
    return shape;
  }
  int64_t parse_dimension() {
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (value <= kMaxDimension) value = value * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) fail_at("shape", "expected a non-negative integer");
    if (pos_ - start > 1 && text_[start] == '0') fail_at("shape", "leading zero in a dimension");
    if (value > kMaxDimension) {
      fail(label_, "shape", "dimension " + text_.substr(start, pos_ - start) + " exceeds int32");
    }
    return value;
  }

  const std::string& text_;
  const std::string& label_;
  size_t pos_ = 0;
};

// The header and where the data starts, with the data size checked against the shape.
struct Layout {
  Header header;
  size_t data_offset = 0;
  size_t item_size = 0;  // bytes
  size_t count = 0;      // elements
};

struct Dtype {
  const char* descr;
  size_t item_size;
};

Layout parse_layout(const std::vector<uint8_t>& bytes, const std::string& label,
                    const std::vector<Dtype>& accepted) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    fail(label, "magic", "not a .npy file (no \\x93NUMPY magic string)");
  }
  const int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    fail(label, "version", "unsupported format version " + std::to_string(major) + "." +
                               std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
  }
  const size_t prefix = major == 1 ? 10 : 12;
  if (bytes.size() < prefix) fail(label, "header_len", "file ends inside the header length");
  size_t header_len = 0;
  for (size_t i = prefix; i-- > 8;) header_len = (header_len << 8) | bytes[i];
  if (header_len > bytes.size() - prefix) {
    fail(label, "header_len", "header of " + std::to_string(header_len) + " bytes runs past the end of the " +
                                  std::to_string(bytes.size()) + "-byte file");
  }
  Layout layout;
  layout.header = parse_header(
      std::string(reinterpret_cast<const char*>(bytes.data()) + prefix, header_len), label);
  layout.data_offset = prefix + header_len;

  const Header& h = layout.header;
  std::string expected;
  for (const Dtype& d : accepted) {
    if (h.descr == d.descr) layout.item_size = d.item_size;
    expected += (expected.empty() ? "'" : " or '") + std::string(d.descr) + "'";
  }
  if (layout.item_size == 0) fail(label, "descr", "unsupported dtype '" + h.descr + "' (expected " + expected + ")");
  if (h.fortran_order) {
    fail(label, "fortran_order", "Fortran-order arrays are not supported (save a C-contiguous array)");
  }

  // Compare the shape with the bytes actually present before anything is allocated.
  const size_t available = bytes.size() - layout.data_offset;
  uint64_t needed = layout.item_size;  // bytes, unless `overflow`
  bool overflow = false;
  for (int64_t d : h.shape) {
    if (d == 0) {
      needed = 0;
      overflow = false;
      break;
    }
    const auto dim = static_cast<uint64_t>(d);
    if (!overflow && dim > std::numeric_limits<uint64_t>::max() / needed) overflow = true;
    if (!overflow) needed *= dim;
  }
  const std::string need = "shape " + shape_string(h.shape) + " of '" + h.descr + "' needs ";
  const std::string have = " bytes, the file has " + std::to_string(available) + " after the header";
  if (overflow) fail(label, "data", need + "more than 2^64" + have + " (truncated)");
  if (needed > available) fail(label, "data", need + std::to_string(needed) + have + " (truncated)");
  if (needed < available) fail(label, "data", need + std::to_string(needed) + have + " (trailing bytes)");
  const size_t count = static_cast<size_t>(needed) / layout.item_size;
  layout.count = count;
  return layout;
}

uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

std::vector<uint8_t> read_file(const std::string& path, const std::string& label) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::runtime_error(label + ": file not found (or not a regular file)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(label + ": cannot open file");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(label + ": read error");
  return bytes;
}

std::vector<uint8_t> encode(const std::vector<int64_t>& shape, const std::string& descr,
                            const uint8_t* data, size_t data_bytes) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                       shape_string(shape) + ", }";
  // numpy pads with spaces and a final newline so that the data starts 64-byte aligned.
  const size_t prefix = header.size() + 11 <= 65535 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  out.push_back(prefix == 10 ? 1 : 2);
  out.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<uint8_t>((header.size() >> (8 * i)) & 0xff));
  out.insert(out.end(), header.begin(), header.end());
  if (data_bytes > 0) out.insert(out.end(), data, data + data_bytes);
  return out;
}

size_t element_count(const std::vector<int64_t>& shape) {
  size_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("npy: negative dimension in shape " + shape_string(shape));
    count *= static_cast<size_t>(d);
  }
  return count;
}

}  // namespace

Header parse_header(const std::string& text, const std::string& label) {
  return HeaderParser(text, label).parse();
}

Array<int32_t> parse_int32(const std::vector<uint8_t>& bytes, const std::string& label) {
  // '<i8' (numpy's default integer) is narrowed with a range check.
  const Layout layout = parse_layout(bytes, label, {{"<i4", 4}, {"<i8", 8}});
  const size_t item_size = layout.item_size;
  const bool wide = item_size == 8;
  Array<int32_t> array{layout.header.shape, std::vector<int32_t>(layout.count)};
  const uint8_t* data = bytes.data() + layout.data_offset;
  for (size_t i = 0; i < layout.count; ++i) {
    const uint64_t raw = load_le(data + i * item_size, item_size);
    const int64_t value = wide ? static_cast<int64_t>(raw) : static_cast<int32_t>(static_cast<uint32_t>(raw));
    if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
      fail(label, "data", "element " + std::to_string(i) + " value " + std::to_string(value) +
                              " does not fit int32");
    }
    array.values[i] = static_cast<int32_t>(value);
  }
  return array;
}

Array<uint8_t> parse_uint8(const std::vector<uint8_t>& bytes, const std::string& label) {
  const Layout layout = parse_layout(bytes, label, {{"|u1", 1}, {"|b1", 1}});
  const uint8_t* data = bytes.data() + layout.data_offset;
  Array<uint8_t> array{layout.header.shape, std::vector<uint8_t>(data, data + layout.count)};
  if (layout.header.descr == "|b1") {
    for (size_t i = 0; i < layout.count; ++i) {
      if (array.values[i] > 1) {
        fail(label, "data", "element " + std::to_string(i) + " of a bool array is " +
                                std::to_string(array.values[i]) + ", not 0 or 1");
      }
    }
  }
  return array;
}

Array<int32_t> read_int32(const std::string& path, const std::string& label) {
  const std::string& l = label.empty() ? path : label;
  return parse_int32(read_file(path, l), l);
}

Array<uint8_t> read_uint8(const std::string& path, const std::string& label) {
  const std::string& l = label.empty() ? path : label;
  return parse_uint8(read_file(path, l), l);
}

std::vector<uint8_t> encode_int32(const std::vector<int64_t>& shape, const int32_t* values) {
  const size_t count = element_count(shape);
  std::vector<uint8_t> data(count * 4);
  for (size_t i = 0; i < count; ++i) {
    const auto u = static_cast<uint32_t>(values[i]);
    for (size_t b = 0; b < 4; ++b) data[4 * i + b] = static_cast<uint8_t>((u >> (8 * b)) & 0xff);
  }
  return encode(shape, "<i4", data.data(), data.size());
}

std::vector<uint8_t> encode_uint8(const std::vector<int64_t>& shape, const uint8_t* values) {
  return encode(shape, "|u1", values, element_count(shape));
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace dsv4::harness::npy
