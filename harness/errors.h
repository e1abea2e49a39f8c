// What went wrong, as the `dsv4` program reports it: a mismatch between the reference and the
// optimized path (exit 1), invalid input (exit 2: a bad option, a malformed or structurally
// invalid capture, a step past a resource limit) or an internal error (exit 3: anything else).
#pragma once
#include <stdexcept>
#include <string>

namespace dsv4::harness {

enum ExitCode : int {
  kExitPass = 0,
  kExitMismatch = 1,
  kExitInvalidInput = 2,
  kExitInternalError = 3,
};

// Invalid input: the message names the file (or option), the field and, where there is one,
// the layer and the row. std::runtime_error so that existing callers keep catching it.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `text` as it can be printed inside a message: quotes, backslashes, control characters, NUL
// and bytes >= 0x7f escaped (\", \\, \n, \xNN), at most `max_chars` characters of input
// (then "..."). User-supplied strings (file names, JSON strings) go through this, so a NUL
// or a terminal escape in them can neither cut nor garble a message.
std::string printable(const std::string& text, size_t max_chars = 200);

}  // namespace dsv4::harness
