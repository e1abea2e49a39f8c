// dsv4: the main job. `verify` checks reference == optimized (uncached and cached) on random
// DeepSeek-V4 steps on every backend present; `replay DIR` does the same on a captured step;
// `demo` shows what the builder produces for one DeepSeek-V4-Flash step. The command line
// itself lives in harness/cli.cpp (tested in-process); exit codes in harness/errors.h.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "harness/cli.h"
#include "harness/errors.h"

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv, argv + argc);
    return dsv4::harness::run_dsv4(args, std::cout, std::cerr);
  } catch (const std::exception& e) {  // what run_dsv4 could not even report (e.g. out of memory)
    std::cerr << "dsv4: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "dsv4: internal error: unknown exception\n";
  }
  return dsv4::harness::kExitInternalError;
}
