#include "harness/npy.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "harness/errors.h"
#include "harness/input_file.h"

namespace dsv4::harness::npy {
namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();

[[noreturn]] void fail(const std::string& label, const std::string& field, const std::string& what) {
  throw InputError(label + ": field '" + field + "': " + what);
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
      if (!consume(':')) fail_at("header", "expected ':' after key '" + printable(key, 40) + "'");
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
        fail(label_, "header", "unexpected key '" + printable(key, 40) + "'");
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
      fail(label_, "shape", "dimension " + printable(text_.substr(start, pos_ - start), 40) + " exceeds int32");
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
  uint64_t data_offset = 0;
  size_t item_size = 0;  // bytes
  size_t count = 0;      // elements
};

struct Dtype {
  const char* descr;
  size_t item_size;
};

const std::vector<Dtype> kInt32Dtypes = {{"<i4", 4}, {"<i8", 8}};  // '<i8' is narrowed
const std::vector<Dtype> kUint8Dtypes = {{"|u1", 1}, {"|b1", 1}};

// The fixed part before the header: magic, version, header length.
struct Preamble {
  size_t prefix = 0;  // bytes before the header: 10 (version 1) or 12
  uint64_t header_len = 0;
};

// `p` holds the first `n` bytes of a file of `file_size` bytes, n >= min(file_size, 12).
Preamble parse_preamble(const uint8_t* p, size_t n, uint64_t file_size, const std::string& label) {
  if (file_size == 0) fail(label, "magic", "not a .npy file (the file is empty)");
  if (n < 8 || std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    fail(label, "magic", "not a .npy file (no \\x93NUMPY magic string)");
  }
  const int major = p[6], minor = p[7];
  if (major < 1 || major > 3 || minor != 0) {
    fail(label, "version", "unsupported format version " + std::to_string(major) + "." +
                               std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
  }
  Preamble pre;
  pre.prefix = major == 1 ? 10 : 12;
  if (file_size < pre.prefix || n < pre.prefix) fail(label, "header_len", "file ends inside the header length");
  for (size_t i = pre.prefix; i-- > 8;) pre.header_len = (pre.header_len << 8) | p[i];
  if (pre.header_len > file_size - pre.prefix) {
    fail(label, "header_len", "header of " + std::to_string(pre.header_len) + " bytes runs past the end of the " +
                                  std::to_string(file_size) + "-byte file");
  }
  if (pre.header_len > kMaxHeaderBytes) {
    fail(label, "header_len", "header of " + std::to_string(pre.header_len) + " bytes is above the limit of " +
                                  std::to_string(kMaxHeaderBytes) + " (numpy writes headers under 1 KiB)");
  }
  return pre;
}

// Checks the dtype and order, and the shape against the bytes the file has after the header
// and against `limit`, before anything is allocated for the data.
Layout check_layout(Header header, uint64_t data_offset, uint64_t file_size, const std::string& label,
                    const std::vector<Dtype>& accepted, const ByteLimit& limit) {
  Layout layout;
  layout.header = std::move(header);
  layout.data_offset = data_offset;
  const Header& h = layout.header;
  std::string expected;
  for (const Dtype& d : accepted) {
    if (h.descr == d.descr) layout.item_size = d.item_size;
    expected += (expected.empty() ? "'" : " or '") + std::string(d.descr) + "'";
  }
  if (layout.item_size == 0) {
    fail(label, "descr", "unsupported dtype '" + printable(h.descr, 40) + "' (expected " + expected + ")");
  }
  if (h.fortran_order) {
    fail(label, "fortran_order", "Fortran-order arrays are not supported (save a C-contiguous array)");
  }

  const uint64_t available = file_size - data_offset;
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
  if (needed > limit.bytes) {
    fail(label, "data", need + std::to_string(needed) + " bytes, above the limit of " +
                            std::to_string(limit.bytes) + " bytes (" + limit.name + ")");
  }
  if (needed / layout.item_size > std::numeric_limits<size_t>::max() / sizeof(int32_t)) {
    fail(label, "data", need + std::to_string(needed) + " bytes, more than this machine can address");
  }
  layout.count = static_cast<size_t>(needed / layout.item_size);
  return layout;
}

uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// Converts `n` raw elements, element `first` of the file onwards, into out[first..].
void convert_int32(const uint8_t* data, size_t item_size, size_t first, size_t n, int32_t* out,
                   const std::string& label) {
  const bool wide = item_size == 8;
  for (size_t k = 0; k < n; ++k) {
    const uint64_t raw = load_le(data + k * item_size, item_size);
    const int64_t value = wide ? static_cast<int64_t>(raw) : static_cast<int32_t>(static_cast<uint32_t>(raw));
    if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
      fail(label, "data", "element " + std::to_string(first + k) + " value " + std::to_string(value) +
                              " does not fit int32");
    }
    out[first + k] = static_cast<int32_t>(value);
  }
}

void convert_uint8(const uint8_t* data, bool is_bool, size_t first, size_t n, uint8_t* out,
                   const std::string& label) {
  for (size_t k = 0; k < n; ++k) {
    if (is_bool && data[k] > 1) {
      fail(label, "data", "element " + std::to_string(first + k) + " of a bool array is " +
                              std::to_string(data[k]) + ", not 0 or 1");
    }
    out[first + k] = data[k];
  }
}

// An in-memory file: preamble, header and layout (no limit: the bytes are already there).
Layout parse_layout(const std::vector<uint8_t>& bytes, const std::string& label,
                    const std::vector<Dtype>& accepted) {
  const Preamble pre = parse_preamble(bytes.data(), bytes.size(), bytes.size(), label);
  Header header =
      parse_header(std::string(reinterpret_cast<const char*>(bytes.data()) + pre.prefix, pre.header_len), label);
  return check_layout(std::move(header), pre.prefix + pre.header_len, bytes.size(), label, accepted,
                      ByteLimit{std::numeric_limits<uint64_t>::max(), "none"});
}

// Reads the preamble and header of `file` and checks the layout; the body comes next.
Layout read_layout(InputFile& file, const std::string& label, const std::vector<Dtype>& accepted,
                   const ByteLimit& limit) {
  uint8_t start[12] = {};
  const auto n = static_cast<size_t>(std::min<uint64_t>(file.size(), sizeof start));
  file.read(start, std::min<size_t>(n, 8));
  if (n >= 8 && std::memcmp(start, kMagic, sizeof kMagic) == 0) {  // the length's width depends on the version
    const size_t prefix = start[6] == 1 ? 10 : 12;
    if (n >= prefix) file.read(start + 8, prefix - 8);
  }
  const Preamble pre = parse_preamble(start, static_cast<size_t>(file.position()), file.size(), label);
  std::string text(static_cast<size_t>(pre.header_len), '\0');
  file.read(text.data(), text.size());
  return check_layout(parse_header(text, label), pre.prefix + pre.header_len, file.size(), label, accepted, limit);
}

// Reads the body in chunks, each converted by `convert(chunk, first_element, count)`: the
// memory is the result and one chunk, never the whole file twice.
template <class Convert>
void read_body(InputFile& file, const Layout& layout, Convert convert) {
  constexpr size_t kChunkBytes = size_t{1} << 20;  // a multiple of every item size
  std::vector<uint8_t> chunk(std::min<size_t>(kChunkBytes, layout.count * layout.item_size));
  size_t first = 0;
  while (first < layout.count) {
    const size_t n = std::min(layout.count - first, kChunkBytes / layout.item_size);
    file.read(chunk.data(), n * layout.item_size);
    convert(chunk.data(), first, n);
    first += n;
  }
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
  const Layout layout = parse_layout(bytes, label, kInt32Dtypes);
  Array<int32_t> array{layout.header.shape, std::vector<int32_t>(layout.count), layout.count * layout.item_size};
  convert_int32(bytes.data() + layout.data_offset, layout.item_size, 0, layout.count, array.values.data(), label);
  return array;
}

Array<uint8_t> parse_uint8(const std::vector<uint8_t>& bytes, const std::string& label) {
  const Layout layout = parse_layout(bytes, label, kUint8Dtypes);
  Array<uint8_t> array{layout.header.shape, std::vector<uint8_t>(layout.count), layout.count};
  convert_uint8(bytes.data() + layout.data_offset, layout.header.descr == "|b1", 0, layout.count,
                array.values.data(), label);
  return array;
}

Array<int32_t> read_int32(const std::string& path, const std::string& label, const ByteLimit& limit) {
  const std::string& l = label.empty() ? path : label;
  InputFile file(path, l);
  const Layout layout = read_layout(file, l, kInt32Dtypes, limit);
  Array<int32_t> array{layout.header.shape, std::vector<int32_t>(layout.count), layout.count * layout.item_size};
  read_body(file, layout, [&](const uint8_t* data, size_t first, size_t n) {
    convert_int32(data, layout.item_size, first, n, array.values.data(), l);
  });
  return array;
}

Array<uint8_t> read_uint8(const std::string& path, const std::string& label, const ByteLimit& limit) {
  const std::string& l = label.empty() ? path : label;
  InputFile file(path, l);
  const Layout layout = read_layout(file, l, kUint8Dtypes, limit);
  Array<uint8_t> array{layout.header.shape, std::vector<uint8_t>(layout.count), layout.count};
  const bool is_bool = layout.header.descr == "|b1";
  read_body(file, layout, [&](const uint8_t* data, size_t first, size_t n) {
    convert_uint8(data, is_bool, first, n, array.values.data(), l);
  });
  return array;
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
