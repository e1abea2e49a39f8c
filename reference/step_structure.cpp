// Shared structural checks (SPEC §4): the step's request layout and its paged caches.
#include "reference/step_structure.h"

#include <stdexcept>

namespace dsv4::ref {

void reject(const std::string& message) { throw std::invalid_argument(message); }

namespace {
std::string at(const char* field, Eigen::Index row, int32_t value) {
  return std::string(field) + "[" + std::to_string(row) + "] = " + std::to_string(value);
}
}  // namespace

void validate_step_structure(const IndexVector& query_start_loc, const IndexVector& seq_lens,
                             const IndexVector& token_to_req) {
  const Eigen::Index R = seq_lens.size();
  const Eigen::Index T = token_to_req.size();
  if (query_start_loc.size() != R + 1) {
    reject("query_start_loc has size " + std::to_string(query_start_loc.size()) +
           ", expected R + 1 = " + std::to_string(R + 1));
  }
  if (query_start_loc(0) != 0) reject(at("query_start_loc", 0, query_start_loc(0)) + ": must be 0");
  for (Eigen::Index r = 1; r <= R; ++r) {
    if (query_start_loc(r) < query_start_loc(r - 1)) {
      reject(at("query_start_loc", r, query_start_loc(r)) + ": below " +
             at("query_start_loc", r - 1, query_start_loc(r - 1)) + " (must not decrease)");
    }
  }
  if (query_start_loc(R) != T) {
    reject(at("query_start_loc", R, query_start_loc(R)) + ": must end at T = " + std::to_string(T));
  }
  // qsl is now a partition of [0, T): token t belongs to r exactly when qsl[r] <= t < qsl[r+1].
  for (Eigen::Index t = 0; t < T; ++t) {
    const int32_t r = token_to_req(t);
    if (r < 0 || r >= R) {
      reject(at("token_to_req", t, r) + ": outside [0, R = " + std::to_string(R) + ")");
    }
    if (t < query_start_loc(r) || t >= query_start_loc(r + 1)) {
      reject(at("token_to_req", t, r) + ": token " + std::to_string(t) + " is outside request " +
             std::to_string(r) + "'s range [query_start_loc[" + std::to_string(r) +
             "], query_start_loc[" + std::to_string(r + 1) + "]) = [" +
             std::to_string(query_start_loc(r)) + ", " + std::to_string(query_start_loc(r + 1)) +
             ")");
    }
  }
  for (Eigen::Index r = 0; r < R; ++r) {
    const int32_t query_length = query_start_loc(r + 1) - query_start_loc(r);
    if (seq_lens(r) < query_length) {
      reject(at("seq_lens", r, seq_lens(r)) + ": below its query length " +
             std::to_string(query_length));
    }
  }
}

void validate_decode_boundary(const IndexVector& query_start_loc, int32_t num_decode_tokens,
                              const std::string& name) {
  const Eigen::Index R = query_start_loc.size() - 1;
  const std::string d = name + " = " + std::to_string(num_decode_tokens);
  if (num_decode_tokens > query_start_loc(R)) {
    reject(d + " exceeds T = " + std::to_string(query_start_loc(R)));
  }
  for (Eigen::Index k = 0; k <= R; ++k) {
    if (query_start_loc(k) == num_decode_tokens) return;
  }
  reject(d + " is not a request boundary of query_start_loc");
}

void validate_paged_cache(const PagedCache& cache, const std::string& name, int32_t num_requests) {
  if (cache.block_size < 1) {
    reject(name + ".block_size = " + std::to_string(cache.block_size) + ": must be >= 1");
  }
  if (cache.block_span && *cache.block_span < cache.block_size) {
    reject(name + ".block_span = " + std::to_string(*cache.block_span) + ": below " + name +
           ".block_size = " + std::to_string(cache.block_size));
  }
  // A persistent [max_num_reqs][max_blocks] table may hold more rows than R (SPEC §7).
  if (cache.block_table.rows() < num_requests) {
    reject(name + ".block_table has " + std::to_string(cache.block_table.rows()) +
           " rows, fewer than R = " + std::to_string(num_requests));
  }
}

}  // namespace dsv4::ref
