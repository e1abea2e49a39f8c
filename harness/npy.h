// A small strict reader/writer of NumPy .npy files (format 1.0, 2.0, 3.0), limited to what a
// step capture holds: C-order int32 arrays ('<i4', or '<i8' narrowed with a range check) and
// uint8/bool arrays ('|u1', '|b1'). No Debian-packaged .npy library exists (no cnpy/libnpy).
//
// Every malformed input throws InputError (a std::runtime_error) "<label>: field '<f>': <what>",
// where f is the header field ('magic', 'version', 'header_len', 'header', 'descr',
// 'fortran_order', 'shape') or 'data'. Files are read header first: the preamble, then the
// header (at most kMaxHeaderBytes), then the shape is checked against the file's size and
// against a byte limit, and only then is the body read, exactly the declared size, in chunks
// converted straight into the result. A corrupt or hostile file can never cause an absurd
// allocation or a read past the declared data; read errors name the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dsv4::harness::npy {

template <class T>
struct Array {
  std::vector<int64_t> shape;  // any rank; 0-size dimensions allowed
  std::vector<T> values;       // C order, product(shape) elements
  uint64_t file_data_bytes = 0;  // the data as the file declared it (read_*: '<i8' is 2x values)
};

// The header dictionary of a .npy file.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the header dict literal "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }"
// strictly: exactly these three keys, Python literal syntax, trailing whitespace only.
Header parse_header(const std::string& text, const std::string& label);

// Parses a whole .npy file held in memory. `label` prefixes error messages (usually the path).
Array<int32_t> parse_int32(const std::vector<uint8_t>& bytes, const std::string& label);
Array<uint8_t> parse_uint8(const std::vector<uint8_t>& bytes, const std::string& label);

// The most data bytes one file may declare before its body is read, unless the caller says.
constexpr uint64_t kDefaultMaxDataBytes = uint64_t{1} << 30;
// Headers numpy writes are under 1 KiB; a longer one is rejected before it is read.
constexpr uint64_t kMaxHeaderBytes = 65536;

// A limit on the data bytes a file may declare; `name` says in messages what the limit is
// (e.g. "--max-capture-bytes, 1073741824 bytes for the whole capture, 5000 left").
struct ByteLimit {
  uint64_t bytes = kDefaultMaxDataBytes;
  std::string name = "the .npy reader's default limit of 1 GiB";
};

// Reads a file; the label defaults to the path. The data a file declares must fit `limit`.
Array<int32_t> read_int32(const std::string& path, const std::string& label = "", const ByteLimit& limit = {});
Array<uint8_t> read_uint8(const std::string& path, const std::string& label = "", const ByteLimit& limit = {});

// Encodes as format 1.0 (2.0 when the header needs it), little-endian, 64-byte aligned data.
std::vector<uint8_t> encode_int32(const std::vector<int64_t>& shape, const int32_t* values);
std::vector<uint8_t> encode_uint8(const std::vector<int64_t>& shape, const uint8_t* values);

// Writes `bytes` to `path`; throws std::runtime_error naming the path on I/O failure.
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace dsv4::harness::npy
