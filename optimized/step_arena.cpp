#include "optimized/step_arena.h"

namespace dsv4::opt {

StepArena::StepArena(ArenaMemory memory, size_t initial_bytes) : memory_(memory) {
  chunks_.reserve(32);
  if (initial_bytes > 0) {
    const size_t bytes = (initial_bytes + kAlignment - 1) / kAlignment * kAlignment;
    chunks_.push_back(Chunk{static_cast<char*>(memory_.allocate(bytes)), bytes});
  }
}

StepArena::~StepArena() {
  for (const Chunk& chunk : chunks_) memory_.release(chunk.base);
}

size_t StepArena::capacity_bytes() const {
  size_t total = 0;
  for (const Chunk& chunk : chunks_) total += chunk.bytes;
  return total;
}

void* StepArena::take_slow(size_t bytes) {
  // Later chunks (kept from earlier steps) first, in order, so a step replays the last one.
  while (current_ + 1 < chunks_.size()) {
    ++current_;
    used_ = 0;
    if (chunks_[current_].bytes >= bytes) {
      used_ = bytes;
      return chunks_[current_].base;
    }
  }
  const size_t grown = capacity_bytes();
  const size_t chunk_bytes = bytes > grown ? bytes : grown;
  chunks_.push_back(Chunk{static_cast<char*>(memory_.allocate(chunk_bytes)), chunk_bytes});
  current_ = chunks_.size() - 1;
  used_ = bytes;
  return chunks_[current_].base;
}

}  // namespace dsv4::opt
