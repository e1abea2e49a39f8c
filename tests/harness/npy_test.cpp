// The strict .npy reader/writer: round trips, the header grammar, and every malformed-file
// error naming the label and the field.
#include "harness/npy.h"

#include "harness/input_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace dsv4::harness::npy {
namespace {

// A .npy file with the given version and header text, and raw data bytes.
std::vector<uint8_t> make_file(int major, const std::string& header,
                               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const size_t len = header.size();
  out.push_back(static_cast<uint8_t>(len & 0xff));
  out.push_back(static_cast<uint8_t>((len >> 8) & 0xff));
  if (major >= 2) {
    out.push_back(static_cast<uint8_t>((len >> 16) & 0xff));
    out.push_back(static_cast<uint8_t>((len >> 24) & 0xff));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> le32(const std::vector<int32_t>& values) {
  std::vector<uint8_t> out;
  for (int32_t v : values) {
    const auto u = static_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<uint8_t>((u >> (8 * b)) & 0xff));
  }
  return out;
}

std::vector<uint8_t> le64(const std::vector<int64_t>& values) {
  std::vector<uint8_t> out;
  for (int64_t v : values) {
    const auto u = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>((u >> (8 * b)) & 0xff));
  }
  return out;
}

// Expects parse_int32 to throw a runtime_error mentioning the label and the field.
void expect_int32_error(const std::vector<uint8_t>& bytes, const std::string& field) {
  try {
    parse_int32(bytes, "file.npy");
    FAIL() << "no error, expected one about field '" << field << "'";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("file.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("field '" + field + "'"), std::string::npos) << msg;
  }
}

TEST(NpyTest, Int32RoundTripKeepsShapeAndValues) {
  const std::vector<int32_t> values = {0, -1, 2147483647, std::numeric_limits<int32_t>::min(), 5, 6};
  const std::vector<uint8_t> bytes = encode_int32({2, 3}, values.data());
  // magic + version + header_len + header is a multiple of 64 (numpy's alignment).
  const size_t header_len = bytes[8] | (bytes[9] << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  const Array<int32_t> a = parse_int32(bytes, "x");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.values, values);
}

TEST(NpyTest, Uint8RoundTripAndZeroSizeShapes) {
  const std::vector<uint8_t> values = {0, 1, 255};
  const Array<uint8_t> a = parse_uint8(encode_uint8({3}, values.data()), "x");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(a.values, values);
  const Array<int32_t> empty = parse_int32(encode_int32({0, 7}, nullptr), "x");
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 7}));
  EXPECT_TRUE(empty.values.empty());
  const Array<uint8_t> empty8 = parse_uint8(encode_uint8({0}, nullptr), "x");
  EXPECT_EQ(empty8.shape, (std::vector<int64_t>{0}));
}

TEST(NpyTest, ReadsVersions2And3AndHeaderVariants) {
  const std::vector<uint8_t> data = le32({7, 8});
  for (int major : {1, 2, 3}) {
    const Array<int32_t> a =
        parse_int32(make_file(major, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", data), "x");
    EXPECT_EQ(a.values, (std::vector<int32_t>{7, 8})) << "version " << major;
  }
  // Key order, double quotes, no trailing comma, spacing are all Python-literal legal.
  const Array<int32_t> b = parse_int32(
      make_file(1, "{ \"shape\" :(1 , 2),'fortran_order':False,\"descr\":\"<i4\"}", data), "x");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{1, 2}));
}

TEST(NpyTest, NarrowsInt64WithRangeCheck) {
  const Array<int32_t> a = parse_int32(
      make_file(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }\n",
                le64({-1, 2147483647, std::numeric_limits<int32_t>::min()})),
      "x");
  EXPECT_EQ(a.values, (std::vector<int32_t>{-1, 2147483647, std::numeric_limits<int32_t>::min()}));
  expect_int32_error(make_file(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }\n",
                               le64({1, int64_t{1} << 32})),
                     "data");
}

TEST(NpyTest, BoolMustBeZeroOrOne) {
  const std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n";
  EXPECT_EQ(parse_uint8(make_file(1, header, {1, 0, 1}), "x").values, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_THROW(parse_uint8(make_file(1, header, {1, 2, 1}), "x"), std::runtime_error);
}

TEST(NpyTest, RejectsBadPreamble) {
  std::vector<uint8_t> good = encode_int32({1}, std::vector<int32_t>{4}.data());
  std::vector<uint8_t> bad_magic = good;
  bad_magic[1] = 'X';
  expect_int32_error(bad_magic, "magic");
  expect_int32_error({0x93, 'N', 'U'}, "magic");
  std::vector<uint8_t> bad_version = good;
  bad_version[6] = 4;
  expect_int32_error(bad_version, "version");
  expect_int32_error(std::vector<uint8_t>(good.begin(), good.begin() + 9), "header_len");
  std::vector<uint8_t> long_header = good;
  long_header[9] = 0x7f;  // header length far past the end of the file
  expect_int32_error(long_header, "header_len");
}

TEST(NpyTest, RejectsBadHeaderDicts) {
  const std::vector<uint8_t> data = le32({1});
  const struct {
    const char* header;
    const char* field;
  } cases[] = {
      {"{'descr': '<i4', 'fortran_order': False}", "shape"},                       // missing key
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "header"},  // unknown key
      {"{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (1,)}", "descr"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "descr"},
      {"{'descr': '>i4', 'fortran_order': False, 'shape': (1,)}", "descr"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4,)}", "descr"},        // wrong kind here
      {"{'descr': '<i4', 'fortran_order': True, 'shape': (1,)}", "fortran_order"},
      {"{'descr': '<i4', 'fortran_order': 0, 'shape': (1,)}", "fortran_order"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1)}", "shape"},         // not a tuple
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (-1,)}", "shape"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "shape"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': [1]}", "shape"},
      {"{'descr': 1, 'fortran_order': False, 'shape': (1,)}", "descr"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,)} x", "header"},     // trailing junk
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,)", "header"},        // unterminated
      {"'descr': '<i4'", "header"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.header);
    expect_int32_error(make_file(1, c.header, data), c.field);
  }
}

TEST(NpyTest, RejectsDataSizeMismatch) {
  const std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }\n";
  expect_int32_error(make_file(1, header, le32({1, 2, 3})), "data");        // truncated
  expect_int32_error(make_file(1, header, le32({1, 2, 3, 4, 5})), "data");  // trailing bytes
  // A huge shape is rejected against the file size, never allocated.
  expect_int32_error(
      make_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2147483647, 2147483647), }\n",
                le32({1})),
      "data");
  expect_int32_error(
      make_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2147483647), }\n",
                le32({1})),
      "data");
  // A dimension beyond int32 is rejected even when another dimension is 0.
  expect_int32_error(
      make_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 4294967296), }\n", {}),
      "shape");
}

// A scratch file, removed at scope exit.
class ScratchFile {
 public:
  explicit ScratchFile(const std::vector<uint8_t>& bytes) {
    std::random_device rd;
    path_ = (std::filesystem::temp_directory_path() / ("dsv4_npy_test_" + std::to_string(rd()) + ".npy")).string();
    write_file(path_, bytes);
  }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

// The header is checked before the body is read: a file declaring more data than the limit
// is rejected without reading (or allocating) it.
TEST(NpyTest, ReadChecksTheHeaderAgainstTheLimitBeforeTheBody) {
  ScratchFile f(make_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (20, 6710886), }\n", {}));
  std::filesystem::resize_file(f.path(), std::filesystem::file_size(f.path()) + uint64_t{20} * 6710886 * 4);  // sparse
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { read_int32(f.path(), "big.npy", ByteLimit{1 << 20, "a test limit"}); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_NE(msg.find("big.npy: field 'data'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs 536870880 bytes, above the limit of 1048576 bytes (a test limit)"), std::string::npos) << msg;
}

// A file longer than its header declares (here 512 MiB of sparse trailing bytes) is rejected
// from its size, not read: the reader reads at most the declared data.
TEST(NpyTest, TrailingBytesAreRejectedFromTheFileSizeWithoutReadingThem) {
  ScratchFile f(encode_int32({2}, std::vector<int32_t>{4, 5}.data()));
  std::filesystem::resize_file(f.path(), uint64_t{512} << 20);
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { read_int32(f.path(), "sparse.npy"); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_NE(msg.find("sparse.npy: field 'data'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(trailing bytes)"), std::string::npos) << msg;
}

TEST(NpyTest, OverlongHeaderIsRejectedBeforeItIsRead) {
  std::vector<uint8_t> bytes = make_file(2, std::string(100000, ' '), {});
  const std::string msg = error_of([&] { parse_int32(bytes, "x.npy"); });
  EXPECT_NE(msg.find("field 'header_len': header of 100000 bytes is above the limit of 65536"), std::string::npos) << msg;
}

// Reading a file and parsing its bytes in memory agree, error for error.
TEST(NpyTest, FileReaderAndMemoryParserAgree) {
  const std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }\n";
  const std::vector<std::vector<uint8_t>> files = {
      make_file(1, header, le32({1, 2, 3, 4})), make_file(1, header, le32({1, 2, 3})),
      make_file(1, header, le32({1, 2, 3, 4, 5})), make_file(3, header, le32({1, 2, 3, 4})),
      make_file(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", le64({7, int64_t{1} << 40})),
      {0x93, 'N', 'U', 'M', 'P', 'Y', 1}, {}, {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 200, 0, 0}};
  for (size_t i = 0; i < files.size(); ++i) {
    ScratchFile f(files[i]);
    std::string from_memory, from_file;
    std::vector<int32_t> a, b;
    from_memory = error_of([&] { a = parse_int32(files[i], "f.npy").values; });
    from_file = error_of([&] { b = read_int32(f.path(), "f.npy").values; });
    if (files[i].empty()) {  // an empty file says so
      EXPECT_NE(from_file.find("the file is empty"), std::string::npos) << from_file;
      continue;
    }
    EXPECT_EQ(from_memory, from_file) << "case " << i;
    EXPECT_EQ(a, b) << "case " << i;
  }
}

// Errors reading a file name it (they used to be "basic_filebuf::underflow error reading the
// file", naming nothing).
TEST(NpyTest, ReadErrorsNameTheFile) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_NE(error_of([&] { read_int32(dir, "dir.npy"); }).find("dir.npy: not a regular file (a directory)"),
            std::string::npos);
  if (std::filesystem::exists("/proc/self/mem")) {  // reports size 0, fails reads
    EXPECT_NE(error_of([&] { read_int32("/proc/self/mem", "mem.npy"); }).find("mem.npy: field 'magic'"),
              std::string::npos);
  }
  // A file that shrinks between its header and its body.
  ScratchFile f(encode_int32({4}, std::vector<int32_t>{1, 2, 3, 4}.data()));
  InputFile file(f.path(), "shrinking.npy");
  std::filesystem::resize_file(f.path(), 10);
  std::vector<uint8_t> buffer(static_cast<size_t>(file.size()));
  const std::string msg = error_of([&] { file.read(buffer.data(), buffer.size()); });
  EXPECT_NE(msg.find("shrinking.npy: the file ended at byte 10"), std::string::npos) << msg;
}

TEST(NpyTest, MissingFileNamesThePath) {
  try {
    read_int32("/nonexistent/dir/q.npy");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/q.npy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dsv4::harness::npy
