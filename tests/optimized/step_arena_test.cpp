// The step workspace: aligned bump allocation over chunks, recycled per step, no growth in
// steady state.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "optimized/host_memory.h"
#include "optimized/step_arena.h"

namespace dsv4::opt {
namespace {

int g_allocations = 0;
void* counting_allocate(size_t bytes) {
  ++g_allocations;
  return allocate_host(bytes);
}

TEST(StepArena, AlignedDistinctAndNullForZero) {
  StepArena arena(ArenaMemory{&allocate_host, &release_host}, 4096);
  EXPECT_EQ(arena.take(0), nullptr);
  char* a = static_cast<char*>(arena.take(1));
  char* b = static_cast<char*>(arena.take(300));
  char* c = static_cast<char*>(arena.take(256));
  for (char* p : {a, b, c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % StepArena::kAlignment, 0u);
  EXPECT_EQ(b - a, 256);
  EXPECT_EQ(c - b, 512);
}

TEST(StepArena, GrowsByChunksAndReplaysThemInSteadyState) {
  g_allocations = 0;
  StepArena arena(ArenaMemory{&counting_allocate, &release_host}, 1024);
  EXPECT_EQ(g_allocations, 1);
  const std::vector<size_t> step = {700, 300, 5000, 100, 20000, 64};
  std::vector<void*> first;
  for (size_t bytes : step) first.push_back(arena.take(bytes));
  const int allocations_after_first_step = g_allocations;
  const size_t capacity = arena.capacity_bytes();
  EXPECT_GT(arena.chunk_count(), 1u);
  EXPECT_GE(capacity, size_t{700 + 300 + 5000 + 100 + 20000 + 64});
  for (int s = 0; s < 5; ++s) {
    arena.recycle();
    for (size_t i = 0; i < step.size(); ++i) EXPECT_EQ(arena.take(step[i]), first[i]) << "step " << s;
  }
  EXPECT_EQ(g_allocations, allocations_after_first_step);
  EXPECT_EQ(arena.capacity_bytes(), capacity);
  // Handed-out memory is usable and distinct.
  std::vector<char*> pointers;
  arena.recycle();
  for (size_t bytes : step) {
    char* p = static_cast<char*>(arena.take(bytes));
    for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<char>(i);
    pointers.push_back(p);
  }
  for (size_t i = 0; i < pointers.size(); ++i) {
    for (size_t j = i + 1; j < pointers.size(); ++j) {
      const bool disjoint = pointers[i] + step[i] <= pointers[j] || pointers[j] + step[j] <= pointers[i];
      EXPECT_TRUE(disjoint) << i << " overlaps " << j;
    }
  }
}

TEST(StepArena, StartsEmptyWithoutInitialBytes) {
  g_allocations = 0;
  StepArena arena(ArenaMemory{&counting_allocate, &release_host}, 0);
  EXPECT_EQ(arena.chunk_count(), 0u);
  EXPECT_NE(arena.take(10), nullptr);
  EXPECT_EQ(g_allocations, 1);
}

}  // namespace
}  // namespace dsv4::opt
