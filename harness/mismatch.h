// One disagreement between the reference and an optimized path, and its one-line description:
// what every comparison of the harness (compare_build, the differential check) reports.
#pragma once
#include <cstdint>
#include <string>

namespace dsv4::harness {

// `expected` is the reference's value, `actual` the optimized path's.
struct Mismatch {
  std::string backend;  // "host", "cuda"; "reference" for problems on the reference side
  std::string path;     // "uncached", "cached"; empty for step-level problems and single builds
  int32_t layer = -1;   // -1: not about one layer
  std::string kind;     // layer kind name
  std::string what;     // "sparse_indices", "sparse_lens", "content errors", "builder calls",
                        // "content errors on a valid step" (reference side),
                        // "shape", "buffer identity", "use after end_step", "exception"
  int32_t token = -1, request = -1, position = -1, column = -1;
  int32_t window = 0;   // to name the column: window part or compressed part
  bool decode_token = false;
  int64_t expected = 0, actual = 0;
  int64_t differing = 0, total = 0;  // elements of this output that differ / exist
  std::string detail;
};

// "[cuda cached] layer 4 (C4A) sparse_indices: token 3 (request 2, prefill, position 401),
// column 130 (compressed part, j = 2): reference 17, optimized 18 (1 of 2200 elements differ)"
std::string format_mismatch(const Mismatch& m);

}  // namespace dsv4::harness
