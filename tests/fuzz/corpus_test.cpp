// The fuzz corpora (minimized by scripts/run_fuzz.sh) and every crash the fuzzers found,
// replayed through the same entry points in every build: none may crash or break an
// invariant (fuzz_entry.h aborts on a broken one).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_entry.h"

namespace dsv4::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_under(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void replay_all(const std::string& target, void (*entry)(const uint8_t*, size_t)) {
  size_t n = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    for (const fs::path& p : files_under(std::string(DSV4_FUZZ_DIR) + "/" + kind + "/" + target)) {
      SCOPED_TRACE(p.string());
      const std::vector<uint8_t> bytes = bytes_of(p);
      entry(bytes.data(), bytes.size());
      ++n;
    }
  }
  // The seeds: every file of the shipped captures.
  for (const fs::path& p : files_under(DSV4_TEST_DATA_DIR)) {
    const bool npy = p.extension() == ".npy";
    if ((target == "npy") != npy) continue;
    const std::vector<uint8_t> bytes = bytes_of(p);
    entry(bytes.data(), bytes.size());
    ++n;
  }
  EXPECT_GT(n, 0u) << target;
  std::cout << "[ " << target << " ] " << n << " inputs replayed\n";
}

TEST(FuzzCorpus, NpyInputsNeitherCrashNorBreakInvariants) { replay_all("npy", &npy); }
TEST(FuzzCorpus, ManifestInputsNeitherCrashNorBreakInvariants) { replay_all("manifest", &manifest); }

}  // namespace
}  // namespace dsv4::fuzz
