// Helpers for the command-line tests: run `dsv4` in-process and capture its exit code and
// output; make scratch copies of the shipped captures and break them on purpose.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cli.h"
#include "harness/npy.h"
#include "support/scratch_dir.h"

namespace dsv4::harness::testing {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;
  std::string out, err;
  std::string all() const { return out + err; }
};

inline CliRun dsv4(std::vector<std::string> args, const BuilderFactory& make_builder = nullptr) {
  args.insert(args.begin(), "dsv4");
  std::ostringstream out, err;
  CliRun r;
  r.code = run_dsv4(args, out, err, make_builder);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

#define EXPECT_CONTAINS(text, part) \
  EXPECT_TRUE(::dsv4::harness::testing::contains(text, part)) << "'" << (part) << "' not in:\n" << (text)
#define EXPECT_NOT_CONTAINS(text, part) \
  EXPECT_FALSE(::dsv4::harness::testing::contains(text, part)) << "'" << (part) << "' in:\n" << (text)

inline std::string shipped(const std::string& name) { return std::string(DSV4_TEST_DATA_DIR) + "/" + name; }

// A scratch copy of a shipped capture, to break.
class CaptureCopy : public dsv4::testing::ScratchDir {
 public:
  explicit CaptureCopy(const std::string& name = "capture_flash_mixed") {
    fs::copy(shipped(name), *this / "c", fs::copy_options::recursive);
  }
  std::string dir() const { return (*this / "c").string(); }
  fs::path file(const std::string& name) const { return *this / "c" / name; }

  nlohmann::json manifest() const {
    std::ifstream in(file("manifest.json"));
    return nlohmann::json::parse(in);
  }
  void edit_manifest(const std::function<void(nlohmann::json&)>& edit) const {
    nlohmann::json m = manifest();
    edit(m);
    write_text("manifest.json", m.dump(2));
  }
  void write_text(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary | std::ios::trunc) << text;
  }
  void append_text(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary | std::ios::app) << text;
  }
  npy::Array<int32_t> read_int32(const std::string& name) const { return npy::read_int32(file(name).string()); }
  void write_int32(const std::string& name, const npy::Array<int32_t>& a) const {
    npy::write_file(file(name).string(), npy::encode_int32(a.shape, a.values.data()));
  }
  CliRun replay(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"replay", dir(), "--backend", "host"};
    args.insert(args.end(), extra.begin(), extra.end());
    return dsv4(args);
  }
};

}  // namespace dsv4::harness::testing
