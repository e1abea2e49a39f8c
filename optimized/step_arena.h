// A bump allocator over a few large chunks of one memory space (host or device), recycled
// at the end of every step. Steady state (the same builds every step) allocates nothing:
// a step replays the same sequence of takes over the same chunks.
#pragma once
#include <cstddef>
#include <vector>

namespace dsv4::opt {

struct ArenaMemory {
  void* (*allocate)(size_t bytes);  // returns >= 256-byte aligned memory or throws
  void (*release)(void* p) noexcept;
};

class StepArena {
 public:
  static constexpr size_t kAlignment = 256;

  StepArena(ArenaMemory memory, size_t initial_bytes);
  ~StepArena();
  StepArena(const StepArena&) = delete;
  StepArena& operator=(const StepArena&) = delete;

  // `bytes` rounded up to kAlignment, aligned; null for 0 bytes. Valid until recycle().
  // Grows by adding a chunk at least as large as all chunks so far; handed-out memory never moves.
  void* take(size_t bytes);
  // Every pointer handed out becomes invalid; the chunks are reused from the first.
  void recycle() {
    current_ = 0;
    used_ = 0;
  }
  size_t capacity_bytes() const;
  size_t chunk_count() const { return chunks_.size(); }

 private:
  struct Chunk {
    char* base;
    size_t bytes;
  };
  void* take_slow(size_t bytes);

  ArenaMemory memory_;
  std::vector<Chunk> chunks_;
  size_t current_ = 0;  // chunk being filled
  size_t used_ = 0;     // bytes used in it
};

inline void* StepArena::take(size_t bytes) {
  if (bytes == 0) return nullptr;
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (current_ < chunks_.size() && chunks_[current_].bytes - used_ >= bytes) {
    void* p = chunks_[current_].base + used_;
    used_ += bytes;
    return p;
  }
  return take_slow(bytes);
}

}  // namespace dsv4::opt
