// The fuzz entry points, shared by the libFuzzer targets (npy_fuzzer.cpp, manifest_fuzzer.cpp,
// built by scripts/run_fuzz.sh with clang) and the corpus regression test (corpus_test.cpp,
// every build): any input may be rejected with InputError; anything else (another
// exception, a crash, a sanitizer report, a broken invariant) is a bug.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "harness/capture.h"
#include "harness/errors.h"
#include "harness/npy.h"

namespace dsv4::fuzz {

[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

template <class T>
void check_array(const harness::npy::Array<T>& a) {
  uint64_t count = 1;
  for (int64_t d : a.shape) {
    if (d < 0 || d > INT32_MAX) broken("dimension " + std::to_string(d));
    count *= static_cast<uint64_t>(d);
  }
  if (count != a.values.size()) broken("shape and value count disagree");
}

// The same bytes through the file reader (an in-memory file, header first, chunked body).
template <class Read>
std::string read_as_file(const std::vector<uint8_t>& bytes, Read read) {
  const int fd = memfd_create("dsv4_fuzz.npy", MFD_CLOEXEC);
  if (fd < 0) return "(no memfd)";
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  std::string result;
  try {
    result = read("/proc/self/fd/" + std::to_string(fd));
  } catch (const harness::InputError& e) {
    result = std::string("error: ") + e.what();
  }
  ::close(fd);
  return result;
}

template <class T>
std::string describe(const harness::npy::Array<T>& a) {
  std::string s = "shape";
  for (int64_t d : a.shape) s += " " + std::to_string(d);
  s += " values";
  for (size_t i = 0; i < a.values.size() && i < 64; ++i) s += " " + std::to_string(a.values[i]);
  return s + " n " + std::to_string(a.values.size());
}

// The .npy parser: in memory and as a file, for both element kinds. Both paths must agree
// (same values or the same message), and a parsed array must encode and parse back equal.
inline void npy(const uint8_t* data, size_t size) {
  namespace npy = harness::npy;
  const std::vector<uint8_t> bytes(data, data + size);
  const std::string label = "fuzz.npy";
  std::string memory;
  try {
    const npy::Array<int32_t> a = npy::parse_int32(bytes, label);
    check_array(a);
    const npy::Array<int32_t> again = npy::parse_int32(npy::encode_int32(a.shape, a.values.data()), label);
    if (again.shape != a.shape || again.values != a.values) broken("int32 round trip");
    memory = describe(a);
  } catch (const harness::InputError& e) {
    memory = std::string("error: ") + e.what();
  }
  const std::string file =
      read_as_file(bytes, [&](const std::string& path) { return describe(npy::read_int32(path, label)); });
  if (file != "(no memfd)" && file != memory) broken("int32 file reader: " + file + "\nmemory parser: " + memory);

  try {
    const npy::Array<uint8_t> a = npy::parse_uint8(bytes, label);
    check_array(a);
    memory = describe(a);
  } catch (const harness::InputError& e) {
    memory = std::string("error: ") + e.what();
  }
  const std::string file8 =
      read_as_file(bytes, [&](const std::string& path) { return describe(npy::read_uint8(path, label)); });
  if (file8 != "(no memfd)" && file8 != memory) broken("uint8 file reader: " + file8 + "\nmemory parser: " + memory);

  try {  // the header grammar on its own
    npy::parse_header(std::string(bytes.begin(), bytes.end()), label);
  } catch (const harness::InputError&) {
  }
}

// The manifest parser: a parsed manifest keeps its promises.
inline void manifest(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  harness::Manifest m;
  try {
    m = harness::parse_manifest(text, "fuzz/manifest.json");
  } catch (const harness::InputError&) {
    return;
  }
  const ref::ModelSchedule& s = m.schedule;
  if (s.compress_ratios.empty() || s.compress_ratios.size() > 1024) broken("layer count");
  if (s.window < 1 || s.window > (1 << 20)) broken("window");
  if (m.files.size() != 7) broken("files");
  size_t c4a = 0;
  for (int32_t r : s.compress_ratios) {
    if (r != 0 && r != 1 && r != 4 && r != 128) broken("ratio");
    c4a += r == 4;
  }
  if (m.c4a_layers.size() != c4a) broken("c4a_layers is not one entry per C4A layer");
  for (const auto& l : m.c4a_layers) {
    if (l.layer < 0 || l.layer >= s.num_layers() || s.compress_ratios[static_cast<size_t>(l.layer)] != 4) {
      broken("c4a layer");
    }
    for (const std::string* name : {&l.decode_local, &l.prefill_topk})
      if (name->empty() || name->find('/') != std::string::npos || name->find('\0') != std::string::npos)
        broken("name");
  }
  if (m.c4a_block_size * 4 != s.main_block_size || m.c128a_block_size * 128 != s.main_block_size) broken("blocks");
  // Version 2 (SPEC §7): spans at least their block size, strides positive, capacities and
  // sizes non-negative, output rows 16-byte aligned; none of it in a version-1 manifest.
  if (m.version < 1 || m.version > 2) broken("version");
  const std::pair<const harness::Manifest::Addressing*, int32_t> caches[] = {
      {&m.swa, m.swa_block_size}, {&m.c4a, m.c4a_block_size}, {&m.c128a, m.c128a_block_size}};
  for (const auto& [a, block_size] : caches) {
    if (a->block_span && *a->block_span < block_size) broken("block span below the block size");
    if (a->table_row_stride < 0) broken("table row stride");
    if (m.version == 1 && (a->block_span || a->base_offset != 0 || a->table_row_stride != 0)) broken("v2 field in v1");
  }
  if (m.engine) {
    const harness::Manifest::Engine& e = *m.engine;
    if (m.version == 1) broken("engine in v1");
    if (e.num_tokens < 0 || e.num_requests < 0 || e.decode_capacity < 0 || e.prefill_capacity < 0 || e.c128a_capacity < 0)
      broken("engine counts");
    if (e.output_row_padding < 0 || e.output_row_padding > 64 || e.output_row_padding % 4 != 0) broken("output padding");
  }
}

}  // namespace dsv4::fuzz
