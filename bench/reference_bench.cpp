// The oracle's speed (DESIGN: "8K tokens x 8K columns in well under a second"): one C128A
// build of 8192 prefill tokens at the end of a 1M-token context, so every token has
// (pos + 1) / 128 ~ 8192 compressed tokens and the output is 8192 x (128 + 8192).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "reference/model_schedule.h"

namespace dsv4::ref {
namespace {

constexpr int32_t kContext = 1 << 20;       // seq_len after this step
constexpr int32_t kPrefillTokens = 8192;
constexpr int32_t kSwaBlockSize = 64;
constexpr int32_t kC128aBlockSize = 256 / 128;

// A block table row of `blocks` distinct physical blocks in shuffled order (as a paged
// allocator hands them out after some churn), plus a few unused tail entries.
IndexMatrix shuffled_table(int32_t blocks, uint32_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
  IndexMatrix table = IndexMatrix::Constant(1, blocks + 16, -1);
  for (int32_t j = 0; j < blocks; ++j) table(0, j) = ids[static_cast<size_t>(j)];
  return table;
}

Step long_context_prefill_step() {
  Step step;
  step.query_start_loc = IndexVector(2);
  step.query_start_loc << 0, kPrefillTokens;
  step.seq_lens = IndexVector::Constant(1, kContext);
  step.token_to_req = IndexVector::Zero(kPrefillTokens);
  step.num_decode_tokens = 0;
  step.swa = PagedCache{shuffled_table(kContext / kSwaBlockSize, 1), kSwaBlockSize};
  step.c128a = PagedCache{shuffled_table(kContext / 128 / kC128aBlockSize, 2), kC128aBlockSize};
  step.c4a = PagedCache{shuffled_table(kContext / 4 / 64, 3), 64};
  return step;
}

void BM_ReferenceC128aLongContextPrefill(benchmark::State& state) {
  ModelSchedule schedule;
  schedule.name = "one C128A layer";
  schedule.compress_ratios = {128};
  const BuilderInputs in = layer_builder_inputs(long_context_prefill_step(), schedule, 0, nullptr);
  int64_t content_errors = 0;
  for (auto _ : state) {
    BuilderOutput out = build_mixed_sparse_indices(in);
    content_errors += out.content_errors;
    benchmark::DoNotOptimize(out.sparse_indices.data());
  }
  const int64_t width = int64_t{in.window} + in.topk;
  state.counters["topk"] = in.topk;
  state.counters["width"] = static_cast<double>(width);
  state.counters["content_errors"] = static_cast<double>(content_errors);
  state.SetItemsProcessed(state.iterations() * kPrefillTokens * width);  // elements written
  state.SetBytesProcessed(state.iterations() * kPrefillTokens * width *
                          static_cast<int64_t>(sizeof(int32_t)));
}
BENCHMARK(BM_ReferenceC128aLongContextPrefill)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace dsv4::ref

BENCHMARK_MAIN();
