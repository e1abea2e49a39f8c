// Reading input files with every error naming the file (POSIX I/O, errno in the message):
// no std::ifstream, whose read errors surface as "basic_filebuf::underflow" exceptions that
// name nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace dsv4::harness {

class InputFile {
 public:
  // Opens `path` for reading; `label` starts every message. Throws InputError when the file
  // is missing, unreadable or not a regular file.
  InputFile(const std::string& path, std::string label);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }          // at open time
  uint64_t position() const { return position_; }  // bytes read so far
  const std::string& label() const { return label_; }
  // Reads exactly n bytes or throws InputError (read error, or the file ended early).
  void read(void* out, size_t n);

 private:
  std::string label_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t position_ = 0;
};

// A whole small file (a manifest); one larger than max_bytes is rejected before it is read.
std::string read_text_file(const std::string& path, const std::string& label, uint64_t max_bytes);

}  // namespace dsv4::harness
