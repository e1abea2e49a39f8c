#include "harness/generators.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <climits>
#include <numeric>
#include <random>
#include <sstream>

#include "harness/persistent_buffers.h"

namespace dsv4::harness {
namespace {

// Bulk content (block permutations, indexer picks) dominates generation time, and the CLI
// generates under a lock: a small fast generator (splitmix64) instead of mt19937_64.
class Rng {
 public:
  using result_type = uint64_t;
  explicit Rng(uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// RapidCheck's element/weightedElement never shrink. These choose the same way but shrink
// toward the first alternative, so alternatives are listed simplest first.
template <class T>
rc::Gen<T> weighted(std::vector<std::pair<int, T>> alternatives) {
  int total = 0;
  for (const auto& a : alternatives) total += a.first;
  return rc::gen::map(rc::gen::inRange(0, total), [alternatives](int x) {
    for (const auto& [weight, value] : alternatives) {
      if (x < weight) return value;
      x -= weight;
    }
    return alternatives.back().second;
  });
}

template <class T, class... Ts>
rc::Gen<T> one_of_values(T first, Ts... rest) {
  return weighted<T>({{1, first}, {1, static_cast<T>(rest)}...});
}

template <class T>
rc::Gen<T> weighted_gen(std::vector<std::pair<int, rc::Gen<T>>> alternatives) {
  return rc::gen::join(weighted<rc::Gen<T>>(std::move(alternatives)));
}

// A value of `gen` drawn at the nominal size whatever the current one (it still shrinks): the
// SPEC §7 engine layouts appear in small steps too, not only once the size is large.
template <class T>
T at_any_size(const rc::Gen<T>& gen) {
  return *rc::gen::resize(rc::kNominalSize, gen);
}

// The current RapidCheck size (0..100 by default), read from inside gen::exec.
int current_size() {
  return *rc::gen::withSize([](int size) { return rc::gen::just(size); });
}

// Seed for bulk content (permutations, indexer picks). Not shrunk: shrinking works on the
// shape of the step; the content of a shrunk case stays as random as the original.
uint64_t content_seed() {
  return *rc::gen::noShrink(rc::gen::resize(rc::kNominalSize, rc::gen::arbitrary<uint64_t>()));
}

int32_t uniform(Rng& rng, int32_t lo, int32_t hi) {  // inclusive; multiply-shift, no division
  const uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo + 1);
  return static_cast<int32_t>(lo + static_cast<int64_t>(((rng() >> 32) * range) >> 32));
}

int32_t ceil_div(int32_t a, int32_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Unused tail entries of a block table: what engines leave there varies.
enum class TailFill { kMinusOne, kZero, kJunk };

// A paged cache holding units[r] units (tokens, or compressed tokens) of request r. The
// used entries are distinct physical blocks drawn from a pool larger than what is used,
// in random order, like an allocator's free list after churn; then `tail_blocks` columns
// that no request needs.
ref::PagedCache make_paged_cache(const std::vector<int32_t>& units, int32_t block_size,
                                 int32_t tail_blocks, TailFill fill, Rng& rng) {
  const auto num_rows = static_cast<Eigen::Index>(units.size());
  std::vector<int32_t> need(units.size());
  int32_t max_need = 0;
  int32_t used = 0;
  for (size_t r = 0; r < units.size(); ++r) {
    need[r] = ceil_div(units[r], block_size);
    max_need = std::max(max_need, need[r]);
    used += need[r];
  }
  const int32_t pool = used + uniform(rng, 0, used);
  std::vector<int32_t> ids(static_cast<size_t>(pool));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);

  ref::PagedCache cache;
  cache.block_size = block_size;
  cache.block_table.resize(num_rows, max_need + tail_blocks);
  size_t next = 0;
  for (Eigen::Index r = 0; r < num_rows; ++r) {
    for (Eigen::Index j = 0; j < cache.block_table.cols(); ++j) {
      int32_t v = -1;
      if (j < need[static_cast<size_t>(r)]) {
        v = ids[next++];
      } else if (fill == TailFill::kZero) {
        v = 0;
      } else if (fill == TailFill::kJunk) {
        v = uniform(rng, 0, std::max(pool - 1, 0));
      }
      cache.block_table(r, j) = v;
    }
  }
  return cache;
}

// SPEC §7 storage-offset addressing of `cache` from drawn choices (`amount` picks within a
// choice's range). Span: 0 none (S = B), 1 S = B given, 2 S = B + up to 2B + 2, 3 S = 2..5 B,
// 4 the largest span for which the table's largest id still gives an int32 slot (64-bit
// products). Offset: 0 none, 1 up to 100000, 2 within 64 of the highest offset at which every
// slot still fits (valid up to here), 3 past it: the slots of the largest ids cross 2^31,
// 4 negative: small slots fall below 0 (both content errors, SPEC §4).
void set_addressing(ref::PagedCache& cache, int span_kind, int offset_kind, uint32_t amount) {
  const int64_t B = cache.block_size;
  const int64_t top = cache.block_table.size() > 0 ? std::max<int64_t>(cache.block_table.maxCoeff(), 0) : 0;
  int64_t span = cache.span();  // kind 0: as it is
  switch (span_kind) {
    case 1: span = B; break;
    case 2: span = B + 1 + amount % (2 * B + 2); break;
    case 3: span = B * (2 + amount % 4); break;
    case 4: span = std::max<int64_t>(B, (INT32_MAX - (B - 1)) / std::max<int64_t>(top, 1)); break;
    default: break;
  }
  span = std::min<int64_t>(span, INT32_MAX);
  if (span_kind != 0) cache.block_span = static_cast<int32_t>(span);
  const int64_t max_raw = top * span + B - 1;  // the largest slot the table can give without an offset
  const int64_t room = std::max<int64_t>(INT32_MAX - max_raw, 0);
  int64_t offset = 0;
  switch (offset_kind) {
    case 1: offset = amount % (std::min<int64_t>(room, 100000) + 1); break;
    case 2: offset = room - amount % (std::min<int64_t>(room, 64) + 1); break;
    case 3: offset = INT32_MAX - amount % (std::min<int64_t>(max_raw, INT32_MAX) + 1); break;
    case 4: offset = -1 - amount % (std::min<int64_t>(max_raw, INT32_MAX - 1) + 1); break;
    default: break;
  }
  cache.base_offset = static_cast<int32_t>(offset);
}

// Valid addressing of a generated step's fresh cache, shrinking toward none.
void draw_addressing(ref::PagedCache& cache) {
  const int span_kind = at_any_size(weighted<int>({{2, 0}, {1, 1}, {2, 2}, {2, 3}, {1, 4}}));
  const int offset_kind = at_any_size(weighted<int>({{2, 0}, {2, 1}, {2, 2}}));
  set_addressing(cache, span_kind, offset_kind, *rc::gen::noShrink(rc::gen::arbitrary<uint32_t>()));
}

// `count` distinct values of [0, n) in random order.
class DistinctSampler {
 public:
  void sample(int32_t n, int32_t count, Rng& rng, std::vector<int32_t>& out) {
    out.clear();
    if (count * 2 > n) {  // dense: partial Fisher-Yates
      pool_.resize(static_cast<size_t>(n));
      std::iota(pool_.begin(), pool_.end(), 0);
      for (int32_t i = 0; i < count; ++i) {
        std::swap(pool_[static_cast<size_t>(i)], pool_[static_cast<size_t>(uniform(rng, i, n - 1))]);
        out.push_back(pool_[static_cast<size_t>(i)]);
      }
      return;
    }
    if (seen_.size() < static_cast<size_t>(n)) seen_.resize(static_cast<size_t>(n), 0);
    while (static_cast<int32_t>(out.size()) < count) {  // sparse: rejection, < 2 tries each
      const int32_t v = uniform(rng, 0, n - 1);
      if (seen_[static_cast<size_t>(v)]) continue;
      seen_[static_cast<size_t>(v)] = 1;
      out.push_back(v);
    }
    for (int32_t v : out) seen_[static_cast<size_t>(v)] = 0;
  }

 private:
  std::vector<uint8_t> seen_;
  std::vector<int32_t> pool_;
};

int32_t position_of(const ref::Step& s, int32_t t) {
  const int32_t r = s.token_to_req(t);
  const int32_t q = s.query_start_loc(r + 1) - s.query_start_loc(r);
  return s.seq_lens(r) - q + (t - s.query_start_loc(r));
}

bool is_padding(const ref::Step& s, int32_t t) {
  return t < s.num_decode_tokens && !s.decode_valid.empty() &&
         s.decode_valid[static_cast<size_t>(t)] == 0;
}

enum class StepShapeClass { kEmpty, kSingleToken, kDecodeOnly, kPrefillOnly, kMixed };

// Prior context: mostly short (around the window), sometimes long (C128A has entries,
// capacity boundaries of odd block sizes are crossed), sometimes near the limit (past
// 128 * 129 tokens the C128A effective width outgrows 128).
int32_t draw_prior_context(int32_t max_ctx) {
  return *weighted_gen<int32_t>(
      {{4, rc::gen::inRange<int32_t>(0, std::min(max_ctx, 300) + 1)},
       {2, rc::gen::inRange<int32_t>(0, std::min(max_ctx, 5000) + 1)},
       {1, rc::gen::inRange<int32_t>(0, max_ctx + 1)},
       {1, rc::gen::inRange<int32_t>(max_ctx - std::min(max_ctx, 4000), max_ctx + 1)}});
}

struct BlockSizes {
  int32_t swa = 64, c4a = 64, c128a = 2;
};

BlockSizes draw_block_sizes() {
  const int geometry = *weighted<int>({{3, 0}, {2, 1}, {1, 2}});
  if (geometry == 0) return {};  // production: SWA 64, main 256 -> C4A 64, C128A 2
  if (geometry == 1) {           // odd engine configurations
    const int32_t swa = *one_of_values<int32_t>(16, 5, 1, 2, 3, 7, 32, 128);
    const int32_t main = *one_of_values<int32_t>(8, 12, 16, 20, 32, 64, 512);
    return {swa, main / 4, std::max(1, main / 128)};
  }
  return {*rc::gen::inRange<int32_t>(1, 97), *rc::gen::inRange<int32_t>(1, 70),
          *rc::gen::inRange<int32_t>(1, 9)};
}

int32_t draw_max_model_len(int32_t max_seq) {
  const int mode = *weighted<int>({{6, 0}, {1, 1}, {1, 2}, {1, 3}});
  switch (mode) {
    case 1: return std::max(1, max_seq);
    // Below the longest request: the only way the C128A effective-width cap binds.
    case 2: return *rc::gen::inRange<int32_t>(1, std::max(2, max_seq + 1));
    case 3: return *one_of_values<int32_t>(16384, 16385, 128 * 129, 2048);
    default: return 1 << 20;
  }
}

int32_t num_c4a_layers(const ref::ModelSchedule& s) {
  return static_cast<int32_t>(std::count(s.compress_ratios.begin(), s.compress_ratios.end(), 4));
}

// A local compressed index whose block is past the C4A table's width.
int32_t draw_past_width_index(const ref::Step& s) {
  const int32_t width = static_cast<int32_t>(s.c4a.block_table.cols()) * s.c4a.block_size;
  const int mode = *weighted<int>({{4, 0}, {1, 1}, {1, 2}});
  if (mode == 1) return INT32_MAX;
  if (mode == 2) return width + 1000000;
  return width + *rc::gen::inRange<int32_t>(0, 3 * s.c4a.block_size + 1);
}

// Sets a used entry (a block some lookup of request r can reach) of `cache` negative.
std::string corrupt_used_block(const char* name, ref::PagedCache& cache, const ref::Step& s,
                               int32_t ratio) {
  const int32_t r = *rc::gen::inRange<int32_t>(0, s.num_requests());
  const int32_t need = ceil_div(ceil_div(s.seq_lens(r), ratio), cache.block_size);
  const int32_t j = *rc::gen::inRange<int32_t>(0, need);
  const int32_t v = *one_of_values<int32_t>(-1, -2, -1000);
  cache.block_table(r, j) = v;
  std::ostringstream os;
  os << name << "[" << r << "][" << j << "] = " << v << " (used block)";
  return os.str();
}

// One build's inputs (gen_builder_inputs), drawn from a plain generator: the content is what
// matters here, and a seed replays it.
ref::BuilderInputs random_builder_inputs(Rng& rng, const BuildLimits& shape) {
  static constexpr int32_t kWindows[] = {1, 2, 3, 4, 5, 7, 8, 16, 128};
  static constexpr int32_t kRatios[] = {1, 2, 3, 4, 4, 128};
  static constexpr int32_t kBlockSizes[] = {1, 2, 3, 4, 5, 8, 16, 64};
  auto pick = [&](const auto& options) {
    return options[static_cast<size_t>(uniform(rng, 0, static_cast<int32_t>(std::size(options)) - 1))];
  };
  auto chance = [&](int32_t percent) { return uniform(rng, 0, 99) < percent; };

  ref::BuilderInputs in;
  in.window = pick(kWindows);
  in.ratio = pick(kRatios);
  in.topk = uniform(rng, 0, shape.max_topk);
  const int32_t R = uniform(rng, 0, shape.max_requests);
  const int32_t decode_requests = shape.decode_only ? R : shape.prefill_only ? 0 : uniform(rng, 0, R);
  in.query_start_loc = ref::IndexVector::Zero(R + 1);
  in.seq_lens = ref::IndexVector::Zero(R);
  for (int32_t r = 0; r < R; ++r) {
    const int32_t q = r < decode_requests ? uniform(rng, 0, shape.max_decode_query)
                                          : uniform(rng, 0, shape.max_prefill_query);
    in.query_start_loc(r + 1) = in.query_start_loc(r) + q;
    in.seq_lens(r) = q + uniform(rng, 0, shape.max_context);
  }
  const int32_t T = in.query_start_loc(R);
  const int32_t D = in.query_start_loc(decode_requests);
  in.token_to_req = ref::IndexVector::Zero(T);
  for (int32_t r = 0; r < R; ++r)
    for (int32_t t = in.query_start_loc(r); t < in.query_start_loc(r + 1); ++t) in.token_to_req(t) = r;
  const int32_t max_seq = R > 0 ? in.seq_lens.maxCoeff() : 0;

  auto table = [&](int32_t rows, int32_t cols) {
    ref::IndexMatrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      int32_t v = uniform(rng, 0, 5000);
      if (shape.corrupt && chance(4)) v = -uniform(rng, 1, 3);
      if (shape.corrupt && chance(1)) v = (1 << 30) + uniform(rng, 0, 5);  // slot beyond int32
      m.data()[i] = v;
    }
    return m;
  };
  in.swa.block_size = pick(kBlockSizes);
  in.swa.block_table = table(R, ceil_div(max_seq, in.swa.block_size) + uniform(rng, 0, 2));

  const int32_t max_local = std::max(1, (max_seq + 1) / in.ratio);
  if (chance(80)) {
    ref::PagedCache c;
    c.block_size = pick(kBlockSizes);
    // Usually wide enough for every local index, sometimes too narrow (content errors).
    int32_t blocks = ceil_div(max_local, c.block_size) + uniform(rng, 0, 1);
    if (shape.corrupt && chance(20)) blocks = uniform(rng, 0, blocks);
    c.block_table = table(R, blocks);
    in.compressed = c;
  }
  // Valid: below (pos + 1) / ratio of the last position, which the SWA table (no compressed
  // table, ratio 1) also holds.
  const int32_t local_bound = shape.corrupt ? max_local + 8 : std::min(max_local, std::max(max_seq, 1)) - 1;
  auto local_value = [&]() {
    if (chance(15)) return -uniform(rng, 1, 3);  // no entry (-1 and below)
    return uniform(rng, 0, std::max(0, local_bound));
  };

  const int32_t Kd = chance(25) ? 0 : uniform(rng, 0, shape.max_topk);
  in.decode_local = chance(50);
  in.decode_swa_indices = ref::IndexMatrix(D, in.window);
  for (Eigen::Index i = 0; i < in.decode_swa_indices.size(); ++i)
    in.decode_swa_indices.data()[i] = chance(20) ? -1 : uniform(rng, -3, 100000);
  in.decode_compressed = ref::IndexMatrix(chance(20) && Kd == 0 ? 0 : D, Kd);
  for (Eigen::Index i = 0; i < in.decode_compressed.size(); ++i)
    in.decode_compressed.data()[i] = in.decode_local ? local_value() : uniform(rng, -3, 100000);
  if (!in.decode_local && chance(60)) {
    ref::IndexVector lens(D);
    for (int32_t t = 0; t < D; ++t) lens(t) = uniform(rng, 0, Kd);
    in.decode_compressed_lens = lens;
  }
  if (in.decode_local && chance(60)) {
    std::vector<uint8_t> valid(static_cast<size_t>(D));
    for (auto& v : valid) v = chance(80) ? 1 : 0;
    in.decode_valid = valid;
  }
  const int32_t Kp = chance(20) ? 0 : uniform(rng, 0, shape.max_topk + 4);
  in.prefill_topk = ref::IndexMatrix(T - D, Kp);
  for (Eigen::Index i = 0; i < in.prefill_topk.size(); ++i) in.prefill_topk.data()[i] = local_value();
  // Sometimes runs of consecutive local indices, as C128A's positional top-k (the kernels read
  // the table once for a run inside one block): from a random start, across block boundaries
  // and, corrupt, past the table.
  auto runs = [&](ref::IndexMatrix& m) {
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      const int32_t start = uniform(rng, shape.corrupt ? -2 : 0, std::max(0, local_bound));
      for (Eigen::Index c = 0; c < m.cols(); ++c) {
        const int32_t value = start + static_cast<int32_t>(c);
        m(r, c) = !shape.corrupt && value > local_bound ? -1 : value;  // valid: -1 past the last
      }
    }
  };
  if (chance(30)) runs(in.prefill_topk);
  if (in.decode_local && chance(30)) runs(in.decode_compressed);
  return in;
}

}  // namespace

const char* schedule_choice_name(ScheduleChoice choice) {
  switch (choice) {
    case ScheduleChoice::kFlash: return "flash";
    case ScheduleChoice::kPro: return "pro";
    case ScheduleChoice::kRandom: return "random";
    case ScheduleChoice::kAny: return "any";
  }
  return "?";
}

std::optional<ScheduleChoice> parse_schedule_choice(const std::string& name) {
  for (ScheduleChoice c : {ScheduleChoice::kFlash, ScheduleChoice::kPro, ScheduleChoice::kRandom,
                           ScheduleChoice::kAny})
    if (name == schedule_choice_name(c)) return c;
  return std::nullopt;
}

rc::Gen<ref::ModelSchedule> gen_random_schedule() {
  return rc::gen::exec([] {
    const int size = current_size();
    ref::ModelSchedule s;
    s.name = "random";
    const int32_t layers = *weighted_gen<int32_t>(
        {{1, rc::gen::just<int32_t>(0)}, {8, rc::gen::inRange<int32_t>(1, 3 + size / 6)}});
    for (int32_t i = 0; i < layers; ++i)
      s.compress_ratios.push_back(*one_of_values<int32_t>(4, 128, 0, 1));
    s.window = *weighted_gen<int32_t>(
        {{2, rc::gen::inRange<int32_t>(1, 257)},
         {3, rc::gen::just<int32_t>(128)},
         {2, one_of_values<int32_t>(1, 3, 5, 127, 129, 64, 4)}});
    s.c4a_topk = *weighted_gen<int32_t>(
        {{3, rc::gen::inRange<int32_t>(0, 64 + size * 6)},
         {2, rc::gen::just<int32_t>(512)},
         {2, one_of_values<int32_t>(0, 1, 2, 3, 5, 7, 1024)}});
    return s;
  });
}

rc::Gen<ref::ModelSchedule> gen_schedule(ScheduleChoice choice) {
  switch (choice) {
    case ScheduleChoice::kFlash: return rc::gen::just(ref::deepseek_v4_flash());
    case ScheduleChoice::kPro: return rc::gen::just(ref::deepseek_v4_pro());
    case ScheduleChoice::kRandom: return gen_random_schedule();
    case ScheduleChoice::kAny: break;
  }
  return weighted_gen<ref::ModelSchedule>(
      {{2, gen_random_schedule()},
       {1, rc::gen::just(ref::deepseek_v4_flash())},
       {1, rc::gen::just(ref::deepseek_v4_pro())}});
}

rc::Gen<ref::Step> gen_step(StepLimits lim) {
  return rc::gen::exec([lim] {
    const int size = current_size();
    const auto max_tokens = static_cast<int32_t>(
        std::max<int64_t>(1, static_cast<int64_t>(lim.max_tokens) * size / rc::kNominalSize));
    const int32_t max_requests = std::max(1, std::min(lim.max_requests, 1 + size / 5));
    const auto max_ctx = static_cast<int32_t>(
        std::min<int64_t>(lim.max_context, 16 + static_cast<int64_t>(size) * size * 4));

    const auto shape = *weighted<StepShapeClass>(
        {{1, StepShapeClass::kEmpty},
         {2, StepShapeClass::kSingleToken},
         {3, StepShapeClass::kDecodeOnly},
         {2, StepShapeClass::kPrefillOnly},
         {6, StepShapeClass::kMixed}});
    int32_t num_decodes = 0, num_prefills = 0;
    const bool single = shape == StepShapeClass::kSingleToken;
    switch (shape) {
      case StepShapeClass::kEmpty: break;
      case StepShapeClass::kSingleToken:
        (*rc::gen::arbitrary<bool>() ? num_decodes : num_prefills) = 1;
        break;
      case StepShapeClass::kDecodeOnly:
        num_decodes = *rc::gen::inRange<int32_t>(1, max_requests + 1);
        break;
      case StepShapeClass::kPrefillOnly:
        num_prefills = *rc::gen::inRange<int32_t>(1, max_requests + 1);
        break;
      case StepShapeClass::kMixed:
        num_decodes = *rc::gen::inRange<int32_t>(1, max_requests + 1);
        num_prefills = *rc::gen::inRange<int32_t>(1, max_requests + 1);
        break;
    }
    num_decodes = std::max(num_decodes, lim.min_decode_requests);

    // Requests: decodes (1 token, or 2..4 for speculative decoding), then prefill chunks.
    int32_t budget = max_tokens;
    std::vector<int32_t> query_lens, seq_lens;
    int32_t num_decode_tokens = 0;
    for (int32_t i = 0; i < num_decodes && budget > 0; ++i) {
      int32_t q = single ? 1 : *weighted<int32_t>({{6, 1}, {1, 2}, {1, 3}, {1, 4}});
      q = std::min(q, budget);
      budget -= q;
      query_lens.push_back(q);
      seq_lens.push_back(draw_prior_context(max_ctx) + q);
      num_decode_tokens += q;
    }
    for (int32_t i = 0; i < num_prefills && budget > 0; ++i) {
      const int32_t later = num_prefills - i - 1;
      const int32_t cap = single ? 1 : std::max(1, budget - later);
      const int32_t q = *rc::gen::inRange<int32_t>(1, cap + 1);
      budget -= q;
      query_lens.push_back(q);
      seq_lens.push_back(draw_prior_context(max_ctx) + q);  // chunked prefill: prior context
    }

    std::vector<uint8_t> decode_valid;
    if (num_decode_tokens > 0 && *weighted<bool>({{4, false}, {1, true}})) {
      for (int32_t t = 0; t < num_decode_tokens; ++t)
        decode_valid.push_back(*weighted<uint8_t>({{3, 1}, {1, 0}}));
    }

    const BlockSizes blocks = draw_block_sizes();
    const int32_t swa_tail = *rc::gen::inRange<int32_t>(0, 4);
    const int32_t c4a_tail = *rc::gen::inRange<int32_t>(0, 4);
    const int32_t c128a_tail = *rc::gen::inRange<int32_t>(0, 4);
    const auto fill = *one_of_values(TailFill::kMinusOne, TailFill::kZero, TailFill::kJunk);
    const int32_t max_seq =
        seq_lens.empty() ? 0 : *std::max_element(seq_lens.begin(), seq_lens.end());
    const int32_t max_model_len = draw_max_model_len(max_seq);
    Rng rng(content_seed());

    ref::Step s;
    const auto num_requests = static_cast<int32_t>(seq_lens.size());
    const int32_t num_tokens = max_tokens - budget;
    s.query_start_loc.resize(num_requests + 1);
    s.seq_lens.resize(num_requests);
    s.token_to_req.resize(num_tokens);
    s.query_start_loc(0) = 0;
    std::vector<int32_t> c4a_units, c128a_units;
    for (int32_t r = 0; r < num_requests; ++r) {
      const int32_t q = query_lens[static_cast<size_t>(r)];
      s.query_start_loc(r + 1) = s.query_start_loc(r) + q;
      s.seq_lens(r) = seq_lens[static_cast<size_t>(r)];
      for (int32_t t = s.query_start_loc(r); t < s.query_start_loc(r + 1); ++t) s.token_to_req(t) = r;
      c4a_units.push_back(ceil_div(s.seq_lens(r), 4));
      c128a_units.push_back(ceil_div(s.seq_lens(r), 128));
    }
    s.num_decode_tokens = num_decode_tokens;
    s.decode_valid = decode_valid;
    s.swa = make_paged_cache(seq_lens, blocks.swa, swa_tail, fill, rng);
    s.c4a = make_paged_cache(c4a_units, blocks.c4a, c4a_tail, fill, rng);
    s.c128a = make_paged_cache(c128a_units, blocks.c128a, c128a_tail, fill, rng);
    s.max_model_len = max_model_len;
    // A third of the steps address packed pools (SPEC §7); the rest keep the power-of-two path.
    if (at_any_size(weighted<bool>({{2, false}, {1, true}})))
      for (ref::PagedCache* cache : {&s.swa, &s.c4a, &s.c128a}) draw_addressing(*cache);
    return s;
  });
}

rc::Gen<std::vector<ref::C4aIndexerOutput>> gen_c4a_outputs(const ref::Step& step,
                                                            const ref::ModelSchedule& schedule,
                                                            int32_t min_width) {
  return rc::gen::exec([step, schedule, min_width] {
    enum Fill { kTail, kFewer, kScattered };
    std::vector<ref::C4aIndexerOutput> out(schedule.compress_ratios.size());
    const int32_t num_tokens = step.num_tokens();
    const int32_t num_decode = step.num_decode_tokens;
    DistinctSampler sampler;
    std::vector<int32_t> picks, columns;
    for (size_t l = 0; l < out.size(); ++l) {
      if (schedule.compress_ratios[l] != 4) continue;
      const int32_t topk = schedule.c4a_topk;
      const int width_mode = *weighted<int>({{6, 0}, {1, 1}, {1, 2}});
      int32_t width = topk;
      if (width_mode == 1) width = *rc::gen::inRange<int32_t>(0, topk + 9);
      if (width_mode == 2) width = *one_of_values<int32_t>(0, 1, 2, 3, 5);
      width = std::max(width, min_width);
      const Fill fill = *weighted<Fill>({{4, kTail}, {1, kFewer}, {1, kScattered}});
      const bool padding_rows_blank = *weighted<bool>({{3, true}, {1, false}});
      Rng rng(content_seed());

      out[l].decode_local = ref::IndexMatrix::Constant(num_decode, width, -1);
      out[l].prefill_topk = ref::IndexMatrix::Constant(num_tokens - num_decode, width, -1);
      for (int32_t t = 0; t < num_tokens; ++t) {
        if (padding_rows_blank && is_padding(step, t)) continue;
        ref::IndexMatrix& m = t < num_decode ? out[l].decode_local : out[l].prefill_topk;
        const int32_t row = t < num_decode ? t : t - num_decode;
        const int32_t available = (position_of(step, t) + 1) / 4;
        int32_t count = std::min(width, available);
        if (fill == kFewer) count = uniform(rng, 0, count);
        sampler.sample(available, count, rng, picks);
        if (fill == kScattered) {  // -1 holes between picks
          sampler.sample(width, count, rng, columns);
          for (int32_t i = 0; i < count; ++i)
            m(row, columns[static_cast<size_t>(i)]) = picks[static_cast<size_t>(i)];
        } else {
          for (int32_t i = 0; i < count; ++i) m(row, i) = picks[static_cast<size_t>(i)];
        }
      }
    }
    return out;
  });
}

rc::Gen<StepLayout> gen_step_layout(const ref::ModelSchedule& schedule, bool may_drop_tables) {
  return rc::gen::exec([schedule, may_drop_tables] {
    StepLayout l;
    if (!*weighted<bool>({{1, false}, {1, true}})) return l;
    auto matrix = [] {
      return MatrixLayout{*one_of_values<int32_t>(0, 0, 1, 3, 4, 7), *one_of_values<int32_t>(0, 0, 0, 1, 2, 3)};
    };
    auto sometimes = [] { return *weighted<bool>({{2, false}, {1, true}}); };
    auto table = [] { return TableLayout{*one_of_values<int32_t>(0, 0, 1, 3, 5), *one_of_values<int32_t>(0, 0, 1, 4)}; };
    l.swa_table = table();
    l.c4a_table = table();
    l.c128a_table = table();
    l.decode_swa_indices = matrix();
    l.c128a_decode_global = matrix();
    l.c128a_prefill_local = matrix();
    const auto layers = static_cast<size_t>(schedule.num_layers());
    l.c4a_decode_local.resize(layers);
    l.c4a_prefill_topk.resize(layers);
    l.c4a_topk.assign(layers, -1);
    for (size_t i = 0; i < layers; ++i) {
      if (schedule.compress_ratios[i] != 4) continue;
      l.c4a_decode_local[i] = matrix();
      l.c4a_prefill_topk[i] = matrix();
      if (sometimes()) l.c4a_topk[i] = *rc::gen::inRange<int32_t>(0, 2 * schedule.c4a_topk + 9);
    }
    l.drop_decode_valid = sometimes();
    l.drop_c128a_decode_lens = sometimes();
    l.drop_c4a_table = may_drop_tables && sometimes();
    l.drop_c128a_table = may_drop_tables && sometimes();
    return l;
  });
}

rc::Gen<StepCapacity> gen_step_capacity() {
  return rc::gen::exec([] {
    StepCapacity cap;
    cap.extra_tokens = at_any_size(rc::gen::inRange<int32_t>(0, 10));
    cap.extra_decode_rows = at_any_size(rc::gen::inRange<int32_t>(0, cap.extra_tokens + 1));
    cap.extra_prefill_rows = at_any_size(rc::gen::inRange<int32_t>(0, 6));
    cap.extra_requests = at_any_size(rc::gen::inRange<int32_t>(0, 6));
    cap.extra_table_rows = at_any_size(rc::gen::inRange<int32_t>(0, 4));
    cap.c128a_extra_columns = at_any_size(one_of_values<int32_t>(0, 1, 3, 4, 9, 128));
    cap.output_row_padding = 4 * at_any_size(rc::gen::inRange<int32_t>(0, 3));
    return cap;
  });
}

rc::Gen<StepCase> gen_step_case(ScheduleChoice choice, StepLimits limits) {
  return rc::gen::exec([choice, limits] {
    StepCase c;
    c.schedule = *gen_schedule(choice);
    c.step = *gen_step(limits);
    c.c4a_per_layer = *gen_c4a_outputs(c.step, c.schedule);
    c.layout = *gen_step_layout(c.schedule);
    if (at_any_size(weighted<bool>({{2, false}, {1, true}}))) make_persistent(c, *gen_step_capacity(), content_seed());
    return c;
  });
}

rc::Gen<StepCase> gen_corrupted_step_case(ScheduleChoice choice, StepLimits limits) {
  limits.min_decode_requests = std::max(1, limits.min_decode_requests);
  return rc::gen::exec([choice, limits] {
    StepCase c;
    c.schedule = *gen_schedule(choice);
    if (num_c4a_layers(c.schedule) == 0) {  // the certain error needs a C4A layer
      const auto n = static_cast<int32_t>(c.schedule.compress_ratios.size());
      const int32_t at = *rc::gen::inRange<int32_t>(0, n + 1);
      if (at == n) {
        c.schedule.compress_ratios.push_back(4);
      } else {
        c.schedule.compress_ratios[static_cast<size_t>(at)] = 4;
      }
    }
    c.step = *gen_step(limits);
    c.c4a_per_layer = *gen_c4a_outputs(c.step, c.schedule, 1);
    const ref::Step& s = c.step;

    std::vector<int32_t> c4a_layers;
    for (size_t l = 0; l < c.schedule.compress_ratios.size(); ++l)
      if (c.schedule.compress_ratios[l] == 4) c4a_layers.push_back(static_cast<int32_t>(l));
    auto pick_c4a_layer = [&] {
      return c4a_layers[static_cast<size_t>(
          *rc::gen::inRange<int32_t>(0, static_cast<int32_t>(c4a_layers.size())))];
    };
    auto note = [&](int32_t layer, const char* where, int32_t row, int32_t col, int32_t v,
                    const char* what) {
      std::ostringstream os;
      os << "layer " << layer << " " << where << "[" << row << "][" << col << "] = " << v << " ("
         << what << ")";
      c.notes.push_back(os.str());
    };

    const int32_t extras = *rc::gen::inRange<int32_t>(0, 5);
    for (int32_t e = 0; e < extras; ++e) {
      const int kind = *rc::gen::inRange<int>(0, 7);
      if (kind <= 2) {  // C4A values: past the table, past the request, odd negatives
        const int32_t layer = pick_c4a_layer();
        ref::C4aIndexerOutput& o = c.c4a_per_layer[static_cast<size_t>(layer)];
        const int32_t t = *rc::gen::inRange<int32_t>(0, s.num_tokens());
        const bool decode = t < s.num_decode_tokens;
        ref::IndexMatrix& m = decode ? o.decode_local : o.prefill_topk;
        if (m.cols() == 0) continue;
        const int32_t row = decode ? t : t - s.num_decode_tokens;
        const int32_t j = *rc::gen::inRange<int32_t>(0, static_cast<int32_t>(m.cols()));
        const char* where = decode ? "decode_local" : "prefill_topk";
        if (kind == 0) {
          m(row, j) = draw_past_width_index(s);
          note(layer, where, row, j, m(row, j), "past the C4A table");
        } else if (kind == 1) {
          // Inside the table's width but past the request's compressed tokens: reaches an
          // unused entry (-1, 0 or junk).
          const int32_t width = static_cast<int32_t>(s.c4a.block_table.cols()) * s.c4a.block_size;
          const int32_t available = (position_of(s, t) + 1) / 4;
          if (available >= width) continue;
          m(row, j) = *rc::gen::inRange<int32_t>(available, width);
          note(layer, where, row, j, m(row, j), "past the request's compressed tokens");
        } else {
          m(row, j) = *one_of_values<int32_t>(-2, -1000, INT32_MIN);
          note(layer, where, row, j, m(row, j), "negative, not -1");
        }
      } else if (kind == 3) {
        c.notes.push_back(corrupt_used_block("swa_block_table", c.step.swa, s, 1));
      } else if (kind == 4) {
        c.notes.push_back(corrupt_used_block("c4a_block_table", c.step.c4a, s, 4));
      } else if (kind == 5) {
        c.notes.push_back(corrupt_used_block("c128a_block_table", c.step.c128a, s, 128));
      } else {  // any entry, used or an unused tail one
        ref::PagedCache& cache = **one_of_values(&c.step.swa, &c.step.c4a, &c.step.c128a);
        const int32_t r = *rc::gen::inRange<int32_t>(0, s.num_requests());
        const int32_t j = *rc::gen::inRange<int32_t>(0, static_cast<int32_t>(cache.block_table.cols()));
        cache.block_table(r, j) = -7;
        std::ostringstream os;
        os << "block table entry [" << r << "][" << j << "] = -7 (block size " << cache.block_size
           << ")";
        c.notes.push_back(os.str());
      }
    }
    // SPEC §7: a base offset that takes slots past 2^31 or below 0, at any size.
    if (at_any_size(weighted<bool>({{3, false}, {1, true}}))) {
      const char* names[] = {"swa", "c4a", "c128a"};
      const int which = *rc::gen::inRange<int>(0, 3);
      ref::PagedCache& cache = *std::array<ref::PagedCache*, 3>{&c.step.swa, &c.step.c4a, &c.step.c128a}[static_cast<size_t>(which)];
      set_addressing(cache, *rc::gen::inRange<int>(0, 5), *one_of_values<int>(3, 4),
                     *rc::gen::noShrink(rc::gen::arbitrary<uint32_t>()));
      std::ostringstream os;
      os << names[which] << " block span " << cache.span() << ", base offset " << cache.base_offset
         << " (slots past 2^31 or below 0)";
      c.notes.push_back(os.str());
    }
    // The certain one, last so no extra overwrites it: decode local indices are translated in
    // every column below Kd, padding tokens included.
    {
      const int32_t layer = pick_c4a_layer();
      ref::IndexMatrix& m = c.c4a_per_layer[static_cast<size_t>(layer)].decode_local;
      const int32_t t = *rc::gen::inRange<int32_t>(0, static_cast<int32_t>(m.rows()));
      const int32_t j = *rc::gen::inRange<int32_t>(0, static_cast<int32_t>(m.cols()));
      m(t, j) = draw_past_width_index(s);
      note(layer, "decode_local", t, j, m(t, j), "past the C4A table");
    }
    c.layout = *gen_step_layout(c.schedule, /*may_drop_tables=*/false);
    if (at_any_size(weighted<bool>({{2, false}, {1, true}}))) {
      make_persistent(c, *gen_step_capacity(), content_seed());
      if (at_any_size(rc::gen::arbitrary<bool>())) {  // the graph path's status words must name it
        std::mt19937_64 rng(content_seed());
        c.notes.push_back(corrupt_metadata(*c.persistent, rng));
      }
    }
    return c;
  });
}

rc::Gen<ref::BuilderInputs> gen_builder_inputs(BuildLimits limits) {
  return rc::gen::exec([limits] {
    Rng rng(content_seed());
    return random_builder_inputs(rng, limits);
  });
}

rc::Gen<ref::BuilderInputs> gen_engine_builder_inputs(BuildLimits limits) {
  return rc::gen::exec([limits] {
    Rng rng(content_seed());
    ref::BuilderInputs in = random_builder_inputs(rng, limits);
    auto chance = [&](int32_t percent) { return uniform(rng, 0, 99) < percent; };
    for (ref::PagedCache* cache : {&in.swa, in.compressed ? &*in.compressed : nullptr}) {
      if (cache == nullptr) continue;
      const int span_kind = chance(50) ? 0 : uniform(rng, 1, 4);
      const int offset_kind = chance(40) ? 0 : uniform(rng, 1, limits.corrupt ? 4 : 2);
      set_addressing(*cache, span_kind, offset_kind, static_cast<uint32_t>(rng()));
      // A persistent [max_num_reqs][max_blocks] table: rows past R, never read.
      const auto extra = static_cast<Eigen::Index>(uniform(rng, 0, 3));
      ref::IndexMatrix rows = ref::IndexMatrix::Constant(cache->block_table.rows() + extra, cache->block_table.cols(), -9);
      rows.topRows(cache->block_table.rows()) = cache->block_table;
      cache->block_table = rows;
    }
    if (chance(50)) in.row_capacity = static_cast<int32_t>(in.token_to_req.size()) + uniform(rng, 0, 3);
    if (chance(50)) {
      in.compressed_capacity = ref::padded_compressed_width(in.topk, static_cast<int32_t>(in.decode_compressed.cols())) +
                               4 * uniform(rng, 0, 2) + (chance(20) ? uniform(rng, 1, 3) : 0);  // not always a multiple of 4
    }
    return in;
  });
}

rc::Gen<PersistentBuildCase> gen_persistent_build(BuildLimits limits, bool broken_metadata) {
  limits.corrupt = false;  // the metadata is what breaks here
  return rc::gen::exec([limits, broken_metadata] {
    const ref::BuilderInputs step = *gen_engine_builder_inputs(limits);
    std::mt19937_64 rng(content_seed());
    const auto any = [&rng](int32_t hi) { return std::uniform_int_distribution<int32_t>(0, hi)(rng); };
    const ExtraCapacity extra{any(4), any(2), any(3), any(2)};
    PersistentBuildCase c{with_capacity(step, extra, rng), {}};
    if (broken_metadata) c.corruption = corrupt_metadata(c.build, rng);
    return c;
  });
}

rc::Gen<RequestLayout> gen_request_layout() {
  return rc::gen::exec([] {
    auto matrix = [] {
      return MatrixLayout{*one_of_values<int32_t>(0, 1, 3, 4, 7), *one_of_values<int32_t>(0, 0, 1, 2, 3)};
    };
    RequestLayout l;
    switch (*weighted<int>({{1, 0}, {1, 1}, {1, 2}})) {
      case 0: return l;
      case 1: l = same_layout(matrix()); break;
      default: l = RequestLayout{matrix(), matrix(), matrix()}; break;
    }
    l.table_row_padding = *one_of_values<int32_t>(0, 0, 1, 3, 5);
    l.caller_output = *weighted<bool>({{2, false}, {1, true}});
    l.output_row_padding = l.caller_output ? *one_of_values<int32_t>(0, 4, 8) : 0;
    return l;
  });
}

std::string describe(const ref::BuilderInputs& in) {
  std::ostringstream s;
  s << "W=" << in.window << " ratio=" << in.ratio << " topk=" << in.topk << " R=" << in.seq_lens.size()
    << " T=" << in.token_to_req.size() << " D=" << in.decode_swa_indices.rows()
    << " Kd=" << in.decode_compressed.cols() << " Kp=" << in.prefill_topk.cols()
    << (in.decode_local ? " local" : " global") << (in.decode_compressed_lens ? " lens" : "")
    << (in.decode_valid ? " valid" : "") << " swaB=" << in.swa.block_size
    << (in.compressed ? " cB=" + std::to_string(in.compressed->block_size) : std::string(" no-compressed"));
  // SPEC §7, where given.
  for (const auto& [name, cache] : {std::pair<const char*, const ref::PagedCache*>{"swa", &in.swa},
                                    {"c", in.compressed ? &*in.compressed : nullptr}}) {
    if (cache == nullptr) continue;
    if (cache->block_span) s << " " << name << "S=" << *cache->block_span;
    if (cache->base_offset != 0) s << " " << name << "O=" << cache->base_offset;
    if (cache->block_table.rows() > in.seq_lens.size()) s << " " << name << "rows=" << cache->block_table.rows();
  }
  if (in.row_capacity) s << " Tcap=" << *in.row_capacity;
  if (in.compressed_capacity) s << " Pcap=" << *in.compressed_capacity;
  return s.str();
}

}  // namespace dsv4::harness
