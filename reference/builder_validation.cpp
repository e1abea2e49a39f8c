// validate_builder_inputs: every structural error of SPEC §4, checked before any work.
#include <algorithm>
#include <limits>
#include <string>

#include "reference/mixed_sparse_indices.h"
#include "reference/step_structure.h"

namespace dsv4::ref {

namespace {

void require_at_least(const char* field, int32_t value, int32_t minimum) {
  if (value < minimum) {
    reject(std::string(field) + " = " + std::to_string(value) + ": must be >= " +
           std::to_string(minimum));
  }
}

// Every count of the build is an int32 (like the engine's tensors' indices).
void require_int32_count(const char* what, Eigen::Index n) {
  if (n > std::numeric_limits<int32_t>::max()) {
    reject(std::string(what) + " = " + std::to_string(n) + " does not fit int32");
  }
}

void require_rows(const char* field, const IndexMatrix& m, Eigen::Index rows, const char* expected) {
  if (m.rows() != rows) {
    reject(std::string(field) + " has " + std::to_string(m.rows()) + " rows, expected " + expected +
           " = " + std::to_string(rows));
  }
}

void require_size(const char* field, Eigen::Index size, Eigen::Index expected_size, const char* expected) {
  if (size != expected_size) {
    reject(std::string(field) + " has size " + std::to_string(size) + ", expected " + expected +
           " = " + std::to_string(expected_size));
  }
}

}  // namespace

void validate_builder_shapes(const BuilderInputs& in, bool run_time_sizes) {
  // Scalars.
  require_at_least("window", in.window, 1);
  require_at_least("ratio", in.ratio, 1);
  require_at_least("topk", in.topk, 0);
  require_int32_count("T (token_to_req size)", in.token_to_req.size());
  require_int32_count("R (seq_lens size)", in.seq_lens.size());
  require_int32_count("D (decode_swa_indices rows)", in.decode_swa_indices.rows());
  require_int32_count("Kd (decode_compressed columns)", in.decode_compressed.cols());
  require_int32_count("Kp (prefill_topk columns)", in.prefill_topk.cols());
  const auto R = static_cast<int32_t>(in.seq_lens.size());
  const auto T = static_cast<int32_t>(in.token_to_req.size());
  const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
  const auto Kd = static_cast<int32_t>(in.decode_compressed.cols());
  const int64_t P = (int64_t{std::max(in.topk, Kd)} + 3) / 4 * 4;
  const int64_t width = int64_t{in.window} + P;
  if (width > std::numeric_limits<int32_t>::max()) {
    reject("topk = " + std::to_string(in.topk) + ": output width W + P = " + std::to_string(width) +
           " (Kd = " + std::to_string(Kd) + ") does not fit int32");
  }

  // SPEC §7 capacities.
  if (in.row_capacity && (run_time_sizes ? *in.row_capacity != T : *in.row_capacity < T)) {
    reject("row_capacity = " + std::to_string(*in.row_capacity) + (run_time_sizes ? ": must equal" : ": below") +
           " T = " + std::to_string(T) + (run_time_sizes ? " (the token_to_req buffer's rows)" : ""));
  }
  if (in.compressed_capacity) {
    if (*in.compressed_capacity < P) {
      reject("compressed_capacity = " + std::to_string(*in.compressed_capacity) + ": below P = " +
             std::to_string(P) + " (round_up(max(topk, Kd), 4))");
    }
    if (int64_t{in.window} + *in.compressed_capacity > std::numeric_limits<int32_t>::max()) {
      reject("compressed_capacity = " + std::to_string(*in.compressed_capacity) +
             ": output width W + P_cap does not fit int32");
    }
  }

  // The caches.
  validate_paged_cache(in.swa, "swa", R);
  if (in.compressed) validate_paged_cache(*in.compressed, "compressed", R);
  if (in.query_start_loc.size() != int64_t{R} + 1) {
    reject("query_start_loc has size " + std::to_string(in.query_start_loc.size()) +
           ", expected R + 1 = " + std::to_string(int64_t{R} + 1));
  }

  // Shapes against W, D and T - D.
  if (D > 0 && in.decode_swa_indices.cols() != in.window) {
    reject("decode_swa_indices has " + std::to_string(in.decode_swa_indices.cols()) +
           " columns, expected window = " + std::to_string(in.window));
  }
  if (Kd > 0) require_rows("decode_compressed", in.decode_compressed, D, "D");
  if (in.decode_compressed_lens) {
    if (in.decode_local) {
      reject("decode_compressed_lens is given with decode_local = true (it belongs to the global form)");
    }
    require_size("decode_compressed_lens", in.decode_compressed_lens->size(), D, "D");
  }
  if (in.decode_valid) {
    if (!in.decode_local) {
      reject("decode_valid is given with decode_local = false (it belongs to the local form)");
    }
    require_size("decode_valid", static_cast<Eigen::Index>(in.decode_valid->size()), D, "D");
  }
}

void validate_builder_inputs(const BuilderInputs& in) {
  validate_builder_shapes(in, false);
  const auto R = static_cast<int32_t>(in.seq_lens.size());
  const auto T = static_cast<int32_t>(in.token_to_req.size());
  const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
  const auto Kd = static_cast<int32_t>(in.decode_compressed.cols());

  // The step's layout.
  validate_step_structure(in.query_start_loc, in.seq_lens, in.token_to_req);
  for (int32_t r = 0; r < R; ++r) {
    const int64_t capacity = in.swa.row_capacity();
    if (in.seq_lens(r) > capacity) {
      reject("seq_lens[" + std::to_string(r) + "] = " + std::to_string(in.seq_lens(r)) +
             ": above the " + std::to_string(capacity) + " tokens its swa.block_table row can hold (" +
             std::to_string(in.swa.block_table.cols()) + " blocks of " +
             std::to_string(in.swa.block_size) + ")");
    }
  }
  validate_decode_boundary(in.query_start_loc, D, "decode_swa_indices rows: D");
  // (With run-time sizes prefill_topk is a buffer of capacity rows, checked against T - D on
  // the device.)
  require_rows("prefill_topk", in.prefill_topk, T - D, "T - D");
  if (in.decode_compressed_lens) {
    for (int32_t t = 0; t < D; ++t) {
      const int32_t len = (*in.decode_compressed_lens)(t);
      if (len < 0 || len > Kd) {
        reject("decode_compressed_lens[" + std::to_string(t) + "] = " + std::to_string(len) +
               ": outside [0, Kd = " + std::to_string(Kd) + "]");
      }
    }
  }
}

}  // namespace dsv4::ref
