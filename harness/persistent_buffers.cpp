#include "harness/persistent_buffers.h"

#include <algorithm>
#include <string>

namespace dsv4::harness {
namespace {

constexpr int32_t kGarbage = 0x7eadbeef;

// `m` grown by `rows` rows of garbage.
ref::IndexMatrix grown(const ref::IndexMatrix& m, int32_t rows) {
  ref::IndexMatrix out = ref::IndexMatrix::Constant(m.rows() + rows, m.cols(), kGarbage);
  out.topRows(m.rows()) = m;
  return out;
}

ref::IndexVector grown(const ref::IndexVector& v, int32_t entries, int32_t fill) {
  ref::IndexVector out = ref::IndexVector::Constant(v.size() + entries, fill);
  out.head(v.size()) = v;
  return out;
}

}  // namespace

PersistentBuild with_capacity(const ref::BuilderInputs& step, const ExtraCapacity& extra, std::mt19937_64& rng) {
  PersistentBuild b{step, ref::RunTimeSizes{static_cast<int32_t>(step.token_to_req.size()),
                                            static_cast<int32_t>(step.decode_swa_indices.rows()),
                                            static_cast<int32_t>(step.seq_lens.size())}};
  ref::BuilderInputs& in = b.inputs;
  in.row_capacity.reset();
  // D_cap <= T_cap: at least as many extra tokens as extra decode rows.
  in.token_to_req = grown(step.token_to_req, std::max(extra.tokens, extra.decode_rows), -1);  // sentinel ids
  in.seq_lens = grown(step.seq_lens, extra.requests, kGarbage);
  in.query_start_loc = grown(step.query_start_loc, extra.requests, -kGarbage);
  if (step.decode_swa_indices.cols() == 0 && extra.decode_rows > 0) {
    in.decode_swa_indices = ref::IndexMatrix(0, step.window);
  }
  in.decode_swa_indices = grown(in.decode_swa_indices, extra.decode_rows);
  if (step.decode_compressed.cols() > 0) in.decode_compressed = grown(step.decode_compressed, extra.decode_rows);
  if (step.decode_compressed_lens) in.decode_compressed_lens = grown(*step.decode_compressed_lens, extra.decode_rows, kGarbage);
  if (step.decode_valid) in.decode_valid->resize(step.decode_valid->size() + static_cast<size_t>(extra.decode_rows), 7);
  in.prefill_topk = grown(step.prefill_topk, extra.prefill_rows);
  const auto grow_table = [&](ref::PagedCache& cache) {
    cache.block_table = grown(cache.block_table, extra.requests);
    if (cache.block_table.rows() > 0 && cache.block_table.cols() > 0) {
      // A random block id of the step in the rows past R: reading them would give valid-looking slots.
      std::uniform_int_distribution<int32_t> any(-3, 1000);
      for (Eigen::Index r = step.seq_lens.size(); r < cache.block_table.rows(); ++r)
        for (Eigen::Index j = 0; j < cache.block_table.cols(); ++j) cache.block_table(r, j) = any(rng);
    }
  };
  grow_table(in.swa);
  if (in.compressed) grow_table(*in.compressed);
  return b;
}

std::string corrupt_metadata(PersistentBuild& b, std::mt19937_64& rng) {
  ref::BuilderInputs& in = b.inputs;
  const int32_t T = b.sizes.num_tokens, R = b.sizes.num_requests, D = b.sizes.num_decode_tokens;
  std::uniform_int_distribution<int32_t> value(-3, 40);
  const auto pick = [&](int32_t n) { return std::uniform_int_distribution<int32_t>(0, n - 1)(rng); };
  const auto set = [](const char* field, int32_t row, int32_t& entry, int32_t v) {
    entry = v;
    return std::string(field) + "[" + std::to_string(row) + "] = " + std::to_string(v);
  };
  switch (pick(6)) {
    case 0:
      if (T > 0) {
        const int32_t t = pick(T);
        return set("token_to_req", t, in.token_to_req(t), value(rng) % (R + 2));
      }
      [[fallthrough]];
    case 1: {
      const int32_t r = pick(R + 1);
      return set("query_start_loc", r, in.query_start_loc(r), in.query_start_loc(r) + value(rng) % 5 - 2);
    }
    case 2:
      if (R > 0) {
        const int32_t r = pick(R);
        return set("seq_lens", r, in.seq_lens(r), pick(2) == 0 ? value(rng) : 1 << 30);
      }
      [[fallthrough]];
    case 3:
      b.sizes.num_tokens += value(rng) % 4 - 1;
      return "num_tokens = " + std::to_string(b.sizes.num_tokens);
    case 4:
      b.sizes.num_decode_tokens = std::max(0, D + value(rng) % 3 - 1);
      return "num_decode_tokens = " + std::to_string(b.sizes.num_decode_tokens);
    default:
      if (D > 0 && in.decode_compressed_lens) {
        const int32_t t = pick(D);
        return set("decode_compressed_lens", t, (*in.decode_compressed_lens)(t), value(rng) * 100 - 200);
      }
      b.sizes.num_requests += value(rng) % 3 - 1;
      return "num_requests = " + std::to_string(b.sizes.num_requests);
  }
}

}  // namespace dsv4::harness
