// The per-layer path allocates nothing in steady state: StepIndexer::layer_indices (shape check,
// cache lookup or build from the recycled workspace) does no heap allocation once the workspace
// has seen the step's shape. Counted with a replaced global operator new (this binary only).
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "harness/backend_step.h"
#include "harness/step_factory.h"
#include "optimized/host_builder.h"
#include "optimized/step_indexer.h"

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

namespace dsv4::opt {
namespace {

TEST(NoAllocation, SteadyStateLayerCallsDoNotAllocate) {
  harness::StepShape shape;
  shape.num_decodes = 4;
  shape.decode_context = 2000;
  shape.num_prefills = 2;
  shape.prefill_tokens_each = 16;
  shape.prefill_context = 500;
  const ref::Step step = harness::make_step(shape);
  for (const ref::ModelSchedule& schedule : {ref::deepseek_v4_flash(), ref::deepseek_v4_pro()}) {
    const auto c4a = harness::make_c4a_indexer_outputs(step, schedule, 3);
    const harness::BackendStep staged(Backend::kHost, step, schedule, c4a);
    auto builder = make_host_builder();
    for (int s = 0; s < 3; ++s) {
      StepIndexer indexer(*builder, staged.inputs());
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
  auto builder = make_host_builder();
  g_counting = false;
  EXPECT_GT(g_allocations, 0);
}

}  // namespace
}  // namespace dsv4::opt
