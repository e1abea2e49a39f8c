#include "harness/step_factory.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace dsv4::harness {
namespace {

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

// A block table whose rows hold `blocks_needed[r]` physical blocks drawn from one shuffled
// pool (a random physical permutation), then `tail` unused entries pointing at block 0 as
// engines pad them.
ref::PagedCache make_paged_cache(const std::vector<int32_t>& blocks_needed, int32_t block_size,
                                 int32_t tail, std::mt19937_64& rng) {
  const int32_t rows = static_cast<int32_t>(blocks_needed.size());
  const int32_t width =
      (rows == 0 ? 0 : *std::max_element(blocks_needed.begin(), blocks_needed.end())) + tail;
  std::vector<int32_t> pool(static_cast<size_t>(
      std::accumulate(blocks_needed.begin(), blocks_needed.end(), int64_t{0})));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  ref::PagedCache cache;
  cache.block_size = block_size;
  cache.block_table = ref::IndexMatrix::Zero(rows, std::max(width, 1));
  size_t next = 0;
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t j = 0; j < blocks_needed[static_cast<size_t>(r)]; ++j) {
      cache.block_table(r, j) = pool[next++];
    }
  }
  return cache;
}

}  // namespace

ref::Step make_step(const StepShape& shape) {
  if (shape.num_decodes < 0 || shape.num_prefills < 0 || shape.decode_tokens_each < 1 ||
      shape.prefill_tokens_each < 0 || shape.prefill_context < 0 || shape.swa_block_size < 1 ||
      shape.main_block_size < 128 || shape.main_block_size % 128 != 0) {
    throw std::invalid_argument("make_step: invalid StepShape");
  }
  if (shape.num_decodes > 0 && shape.decode_context < shape.decode_tokens_each) {
    throw std::invalid_argument("make_step: decode_context " + std::to_string(shape.decode_context) +
                                " below decode_tokens_each " +
                                std::to_string(shape.decode_tokens_each));
  }
  std::mt19937_64 rng(shape.seed);
  const int32_t num_requests = shape.num_decodes + shape.num_prefills;
  ref::Step step;
  step.max_model_len = shape.max_model_len;
  step.query_start_loc = ref::IndexVector::Zero(num_requests + 1);
  step.seq_lens = ref::IndexVector::Zero(num_requests);
  for (int32_t r = 0; r < num_requests; ++r) {
    const bool decode = r < shape.num_decodes;
    const int32_t query_len = decode ? shape.decode_tokens_each : shape.prefill_tokens_each;
    step.query_start_loc(r + 1) = step.query_start_loc(r) + query_len;
    step.seq_lens(r) = decode ? shape.decode_context : shape.prefill_context + query_len;
  }
  const int32_t num_tokens = step.query_start_loc(num_requests);
  step.num_decode_tokens = shape.num_decodes * shape.decode_tokens_each;
  step.decode_valid.assign(static_cast<size_t>(step.num_decode_tokens), 1);
  step.token_to_req = ref::IndexVector::Zero(num_tokens);
  for (int32_t r = 0; r < num_requests; ++r) {
    for (int32_t t = step.query_start_loc(r); t < step.query_start_loc(r + 1); ++t) {
      step.token_to_req(t) = r;
    }
  }

  const int32_t c4a_block_size = shape.main_block_size / 4;
  const int32_t c128a_block_size = shape.main_block_size / 128;
  std::vector<int32_t> swa_blocks, c4a_blocks, c128a_blocks;
  for (int32_t r = 0; r < num_requests; ++r) {
    const int32_t seq_len = step.seq_lens(r);
    swa_blocks.push_back(ceil_div(seq_len, shape.swa_block_size));
    c4a_blocks.push_back(ceil_div(seq_len / 4, c4a_block_size));
    c128a_blocks.push_back(ceil_div(seq_len / 128, c128a_block_size));
  }
  step.swa = make_paged_cache(swa_blocks, shape.swa_block_size, 2, rng);
  step.c4a = make_paged_cache(c4a_blocks, c4a_block_size, 2, rng);
  step.c128a = make_paged_cache(c128a_blocks, c128a_block_size, 2, rng);
  return step;
}

std::vector<ref::C4aIndexerOutput> make_c4a_indexer_outputs(const ref::Step& step,
                                                            const ref::ModelSchedule& schedule,
                                                            uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int32_t num_tokens = step.num_tokens();
  const int32_t num_decode = step.num_decode_tokens;
  const int32_t topk = schedule.c4a_topk;
  std::vector<int32_t> positions(static_cast<size_t>(num_tokens));
  for (int32_t t = 0; t < num_tokens; ++t) positions[static_cast<size_t>(t)] = ref::token_position(step, t);

  std::vector<ref::C4aIndexerOutput> outputs(static_cast<size_t>(schedule.num_layers()));
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    if (ref::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(layer)]) !=
        ref::LayerKind::kC4A) {
      continue;
    }
    ref::C4aIndexerOutput& out = outputs[static_cast<size_t>(layer)];
    out.decode_local = ref::IndexMatrix::Constant(num_decode, topk, -1);
    out.prefill_topk = ref::IndexMatrix::Constant(num_tokens - num_decode, topk, -1);
    for (int32_t t = 0; t < num_tokens; ++t) {
      // k distinct picks among the n compressed tokens visible at this position:
      // (offset + j * stride) mod n with stride coprime to n is a cheap permutation.
      const int32_t n = (positions[static_cast<size_t>(t)] + 1) / 4;
      const int32_t k = std::min(topk, n);
      if (k == 0) continue;
      const int64_t offset = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      int64_t stride = static_cast<int64_t>(rng() % static_cast<uint64_t>(n)) | 1;
      while (std::gcd(stride, static_cast<int64_t>(n)) != 1) stride += 2;
      auto row = t < num_decode ? out.decode_local.row(t) : out.prefill_topk.row(t - num_decode);
      for (int32_t j = 0; j < k; ++j) row(j) = static_cast<int32_t>((offset + j * stride) % n);
    }
  }
  return outputs;
}

}  // namespace dsv4::harness
