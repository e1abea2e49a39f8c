// The per-layer path allocates nothing in steady state, on every backend: StepIndexer::
// layer_indices (shape check, cache lookup or build from the recycled workspace, the launch)
// does no host heap allocation once the workspace has seen the step's shape. Counted with a
// replaced global operator new (this binary only).
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "harness/backend_step.h"
#include "harness/step_factory.h"
#include "optimized/step_indexer.h"
#include "support/backend_test.h"

namespace {
thread_local bool g_counting = false;
thread_local long g_allocations = 0;

void* counted_allocate(std::size_t bytes, std::size_t alignment) {
  if (g_counting) ++g_allocations;
  bytes = bytes == 0 ? 1 : bytes;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(bytes)
                : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t bytes) { return counted_allocate(bytes, 0); }
void* operator new[](std::size_t bytes) { return counted_allocate(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t a) { return counted_allocate(bytes, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t bytes, std::align_val_t a) { return counted_allocate(bytes, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace dsv4::testing {
namespace {

using NoAllocationTest = BackendTest;
DSV4_ON_EVERY_BACKEND(NoAllocationTest);

TEST_P(NoAllocationTest, SteadyStateLayerCallsDoNotAllocate) {
  harness::StepShape shape;
  shape.num_decodes = 4;
  shape.decode_context = 2000;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 16;
  shape.prefill_context = 500;
  const ref::Step step = harness::make_step(shape);
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 3);
    const harness::BackendStep staged(backend(), step, schedule, c4a);
    auto builder = make_builder();
    for (int s = 0; s < 3; ++s) {
      opt::StepIndexer indexer(*builder, staged.inputs());
      g_allocations = 0;
      g_counting = s > 0;  // the first step sizes the workspace
      for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
        indexer.layer_indices(schedule.compress_ratios[static_cast<size_t>(layer)], staged.c4a(layer));
      }
      g_counting = false;
      EXPECT_EQ(g_allocations, 0) << schedule.name << " step " << s;
      EXPECT_EQ(indexer.content_errors(), 0);
    }
  }
}

// The counter works (so a zero above means something).
TEST(NoAllocation, CounterSeesAllocations) {
  g_allocations = 0;
  g_counting = true;
  auto builder = opt::make_host_builder();
  g_counting = false;
  EXPECT_GT(g_allocations, 0);
}

}  // namespace
}  // namespace dsv4::testing
