#include "harness/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/errors.h"

namespace dsv4::harness {

InputFile::InputFile(const std::string& path, std::string label) : label_(std::move(label)) {
  do {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is rejected below anyway).
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int e = errno;
    throw InputError(label_ + (e == ENOENT || e == ENOTDIR ? ": file not found" : ": cannot open file") + " (" +
                     std::strerror(e) + ")");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int e = errno;
    ::close(fd_);
    throw InputError(label_ + ": cannot stat file (" + std::strerror(e) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw InputError(label_ + ": not a regular file" + (S_ISDIR(st.st_mode) ? " (a directory)" : ""));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() { ::close(fd_); }

void InputFile::read(void* out, size_t n) {
  auto* bytes = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd_, bytes + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      throw InputError(label_ + ": read error at byte " + std::to_string(position_ + done) + " (" +
                       std::strerror(errno) + ")");
    }
    if (got == 0) {
      throw InputError(label_ + ": the file ended at byte " + std::to_string(position_ + done) + ", expected " +
                       std::to_string(position_ + n) + " (changed while being read?)");
    }
    done += static_cast<size_t>(got);
  }
  position_ += n;
}

std::string read_text_file(const std::string& path, const std::string& label, uint64_t max_bytes) {
  InputFile file(path, label);
  if (file.size() > max_bytes) {
    throw InputError(label + ": " + std::to_string(file.size()) + " bytes, above the limit of " +
                     std::to_string(max_bytes));
  }
  std::string text(static_cast<size_t>(file.size()), '\0');
  file.read(text.data(), text.size());
  return text;
}

}  // namespace dsv4::harness
