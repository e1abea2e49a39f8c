#include "harness/persistent_buffers.h"

#include <algorithm>
#include <string>

#include "reference/step.h"

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

int32_t c128a_effective_width(const ref::Step& step) {
  int32_t max_pos = -1;
  for (int32_t t = 0; t < step.num_tokens(); ++t) max_pos = std::max(max_pos, ref::token_position(step, t));
  return ref::c128a_effective_width(max_pos, step.max_model_len);
}

void make_persistent(StepCase& c, const StepCapacity& extra, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto any = [&rng](int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); };
  const auto stale = [&](Eigen::Index n, int32_t lo, int32_t hi) {
    ref::IndexVector v(n);
    for (Eigen::Index i = 0; i < n; ++i) v(i) = any(lo, hi);
    return v;
  };
  const auto stale_rows = [&](const ref::IndexMatrix& m, int32_t rows) {  // `m` grown by `rows` rows
    ref::IndexMatrix out(rows, m.cols());
    for (Eigen::Index i = 0; i < out.size(); ++i) out.data()[i] = any(-2, 1000);  // valid-looking local indices
    out.topRows(std::min<Eigen::Index>(m.rows(), rows)) = m.topRows(std::min<Eigen::Index>(m.rows(), rows));
    return out;
  };
  ref::Step& s = c.step;
  const int32_t T = s.num_tokens(), D = s.num_decode_tokens, R = s.num_requests();
  PersistentStep p;
  p.sizes = ref::RunTimeSizes{T, D, R};
  p.decode_capacity = D + extra.extra_decode_rows;
  p.prefill_capacity = T - D + extra.extra_prefill_rows;
  const int32_t T_cap = T + std::max(extra.extra_tokens, extra.extra_decode_rows);  // D_cap <= T_cap
  const int32_t R_cap = R + extra.extra_requests;

  p.token_to_req = grown(s.token_to_req, T_cap - T, -1);  // sentinel request ids
  p.seq_lens = grown(s.seq_lens, R_cap - R, 0);
  p.seq_lens.tail(R_cap - R) = stale(R_cap - R, 1, 100000);
  p.query_start_loc = grown(s.query_start_loc, R_cap - R, 0);
  p.query_start_loc.tail(R_cap - R) = stale(R_cap - R, 0, T_cap + 8);
  p.decode_valid = s.decode_valid;
  p.decode_valid.resize(static_cast<size_t>(D), 1);  // empty: all valid
  for (int32_t t = D; t < p.decode_capacity; ++t) p.decode_valid.push_back(static_cast<uint8_t>(any(0, 1) * 7));
  p.c4a_per_layer.resize(c.c4a_per_layer.size());
  for (size_t l = 0; l < c.c4a_per_layer.size(); ++l) {
    if (c.schedule.compress_ratios[l] != 4) continue;
    p.c4a_per_layer[l].decode_local = stale_rows(c.c4a_per_layer[l].decode_local, p.decode_capacity);
    p.c4a_per_layer[l].prefill_topk = stale_rows(c.c4a_per_layer[l].prefill_topk, p.prefill_capacity);
  }
  p.c128a_capacity = c128a_effective_width(s) + extra.c128a_extra_columns;
  p.output_row_padding = extra.output_row_padding;

  // The tables: rows of other requests past R, ids of blocks the step uses too.
  for (ref::PagedCache* cache : {&s.swa, &s.c4a, &s.c128a}) {
    ref::IndexMatrix& table = cache->block_table;
    const int32_t top = table.size() > 0 ? std::max(table.maxCoeff(), 0) : 0;
    const auto rows = static_cast<int32_t>(table.rows());
    const int32_t more = std::max(R_cap - rows, 0) + extra.extra_table_rows;
    ref::IndexMatrix out(rows + more, table.cols());
    for (Eigen::Index i = 0; i < out.size(); ++i) out.data()[i] = any(-1, top);
    out.topRows(rows) = table;
    table = out;
  }
  c.persistent = std::move(p);
}

std::string corrupt_metadata(PersistentStep& p, std::mt19937_64& rng) {
  ref::RunTimeSizes& n = p.sizes;
  const auto pick = [&](int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); };
  const auto set = [](const char* field, int32_t row, int32_t& entry, int32_t v) {
    entry = v;
    return std::string(field) + "[" + std::to_string(row) + "] = " + std::to_string(v) + " (persistent buffer)";
  };
  switch (pick(0, 5)) {
    case 0:
      if (n.num_tokens > 0) {
        const int32_t t = pick(0, n.num_tokens - 1);
        return set("token_to_req", t, p.token_to_req(t), pick(-3, n.num_requests + 1));
      }
      [[fallthrough]];
    case 1: {
      const int32_t r = pick(0, n.num_requests);
      return set("query_start_loc", r, p.query_start_loc(r), p.query_start_loc(r) + pick(-2, 2));
    }
    case 2:
      if (n.num_requests > 0) {
        const int32_t r = pick(0, n.num_requests - 1);
        return set("seq_lens", r, p.seq_lens(r), pick(0, 1) == 0 ? pick(-3, 40) : 1 << 30);
      }
      [[fallthrough]];
    case 3:
      n.num_tokens += pick(-1, 2);
      return "num_tokens = " + std::to_string(n.num_tokens) + " (run-time size)";
    case 4:
      n.num_decode_tokens += pick(-1, 1);
      return "num_decode_tokens = " + std::to_string(n.num_decode_tokens) + " (run-time size)";
    default:
      n.num_requests += pick(-1, 1);
      return "num_requests = " + std::to_string(n.num_requests) + " (run-time size)";
  }
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
        // Small, huge, or one past the SWA table's capacity NB * B (the boundary of that check).
        const int32_t r = pick(R);
        const int32_t past = static_cast<int32_t>(std::min<int64_t>(in.swa.row_capacity() + 1, INT32_MAX));
        const int32_t kind = pick(3);
        return set("seq_lens", r, in.seq_lens(r), kind == 0 ? value(rng) : kind == 1 ? 1 << 30 : past);
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
        // Far outside [0, Kd], or just outside it: -1 or Kd + 1 (the boundaries of that check).
        const int32_t t = pick(D);
        const auto Kd = static_cast<int32_t>(in.decode_compressed.cols());
        const int32_t kind = pick(3);
        return set("decode_compressed_lens", t, (*in.decode_compressed_lens)(t),
                   kind == 0 ? value(rng) * 100 - 200 : kind == 1 ? -1 : Kd + 1);
      }
      b.sizes.num_requests += value(rng) % 3 - 1;
      return "num_requests = " + std::to_string(b.sizes.num_requests);
  }
}

}  // namespace dsv4::harness
