// SPEC §7 device-side validation, as the oracle: the step's sizes T, D, R come at run time,
// the metadata buffers are capacities, and instead of throwing, a row whose metadata breaks
// the SPEC §4 checks is written -1 with length 0 and a status names the first failure.
#pragma once
#include <cstdint>
#include <string>

#include "reference/mixed_sparse_indices.h"

namespace dsv4::ref {

// T, D and R of one step, as an engine writes them into device memory before a replay.
struct RunTimeSizes {
  int32_t num_tokens = 0;         // T <= T_cap = token_to_req.size()
  int32_t num_decode_tokens = 0;  // D <= min(T, D_cap = decode_swa_indices.rows())
  int32_t num_requests = 0;       // R <= R_cap = seq_lens.size()
};

// Every check, numbered in the order that defines "first": the status names the failure with
// the smallest (check, row). The numbers are part of SPEC §7 (the device reports the same).
enum class MetadataCheck : int32_t {
  kNone = 0,
  kNumRequests = 1,            // R outside [0, R_cap]; row 0, value R
  kNumTokens = 2,              // T outside [0, T_cap]; row 0, value T
  kNumDecodeTokens = 3,        // D outside [0, min(T, D_cap)]; row 0, value D
  kPrefillRows = 4,            // T - D above prefill_topk's rows; row 0, value T - D
  kQueryStartFirst = 5,        // query_start_loc[0] != 0; row 0
  kQueryStartDecreasing = 6,   // query_start_loc[r] < query_start_loc[r - 1]; row r
  kQueryStartEnd = 7,          // query_start_loc[R] != T; row R
  kTokenRequestRange = 8,      // token_to_req[t] outside [0, R); row t
  kTokenRequestMismatch = 9,   // t outside its request's query range; row t
  kSeqLenBelowQuery = 10,      // seq_lens[r] below its query length; row r
  kSeqLenAboveCapacity = 11,   // seq_lens[r] above the SWA table's NB * B; row r
  kDecodeBoundary = 12,        // request r holds tokens on both sides of D; row r, value D
  kDecodeCompressedLens = 13,  // decode_compressed_lens[t] outside [0, Kd]; row t
};
// The field a check is about ("query_start_loc", "num_tokens", ...).
const char* metadata_check_field(MetadataCheck check);

// The status word: the first failure (check, its row and the offending value) and how many
// (check, row) pairs failed. check == kNone: the metadata is valid.
struct MetadataStatus {
  MetadataCheck check = MetadataCheck::kNone;
  int32_t row = 0;
  int32_t value = 0;
  int64_t failures = 0;
};
// "token_to_req[5] = 9 (check 8, 2 failures)" or "ok".
std::string describe(const MetadataStatus& status);

// The status of `in`'s metadata under `sizes`. The sizes are checked first (checks 1-4); when
// one fails, nothing else is read and every row is invalid.
MetadataStatus check_metadata(const BuilderInputs& in, const RunTimeSizes& sizes);

// Whether row t < T of a step whose sizes passed is built: token_to_req[t] = r in [0, R), t in
// r's query range and that range within [0, T], r's seq_len within [query length, SWA capacity], r not straddling D and, for
// a global-form decode row with lens, the row's length within [0, Kd]. (Failures that belong to
// no row, like query_start_loc[R] != T, are reported but invalidate no row.)
bool row_metadata_valid(const BuilderInputs& in, const RunTimeSizes& sizes, int32_t t);

struct CheckedBuild {
  BuilderOutput output;  // T_cap rows; invalid and padding rows -1 with length 0
  MetadataStatus status;
};
// Throws std::invalid_argument for what is fixed at capture (validate_builder_shapes with
// run-time sizes); the metadata never throws.
CheckedBuild build_mixed_sparse_indices(const BuilderInputs& in, const RunTimeSizes& sizes);

}  // namespace dsv4::ref
