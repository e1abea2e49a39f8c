// The `dsv4` command line (harness/main_dsv4.cpp is only `main`): subcommands verify, replay
// and demo, parsed with CLI11 into typed, range-checked options. Returns the exit code:
// 0 pass, 1 mismatch, 2 invalid input (options, capture, resource limits), 3 internal error
// (harness/errors.h). Never calls exit(); everything goes to `out` and `err`.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/differential.h"

namespace dsv4::harness {

// args[0] is the program name. `make_builder` replaces the real builders of verify and
// replay (tests inject faulty ones to see exit code 1).
int run_dsv4(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const BuilderFactory& make_builder = nullptr);

}  // namespace dsv4::harness
