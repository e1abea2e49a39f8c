// SPEC §7 run-time sizes and the status word of the device-side metadata checks: PODs shared
// by the kernels, the host backend and the API (optimized/build_request.h).
#pragma once
#include <cstdint>

#include "kernels/host_device.h"

namespace dsv4::kernels {

// T, D and R of a step, written by the engine into device memory before a launch or replay.
struct StepSizes {
  int32_t num_tokens;         // T <= T_cap
  int32_t num_decode_tokens;  // D <= min(T, D_cap)
  int32_t num_requests;       // R <= R_cap
};

// The checks, numbered in the order that defines the status's first failure: the smallest
// (check, row). The numbers are the reference's (reference/metadata_checks.h) and SPEC §7's.
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

// The field each check is about.
enum class MetadataField : int32_t {
  kNone = 0,
  kNumRequests,
  kNumTokens,
  kNumDecodeTokens,
  kPrefillTopkRows,
  kQueryStartLoc,
  kTokenToReq,
  kSeqLens,
  kDecodeCompressedLens,
};

// The status word: the first failure and how many (check, row) pairs failed; check == kNone
// (0) when the metadata is valid. Overwritten by every checked build that is given it.
struct MetadataStatus {
  int32_t check;     // MetadataCheck
  int32_t field;     // MetadataField
  int32_t row;
  int32_t value;
  uint32_t failures;
  uint32_t reserved;
};

DSV4_HD constexpr MetadataField metadata_field(MetadataCheck check) {
  switch (check) {
    case MetadataCheck::kNone: return MetadataField::kNone;
    case MetadataCheck::kNumRequests: return MetadataField::kNumRequests;
    case MetadataCheck::kNumTokens: return MetadataField::kNumTokens;
    case MetadataCheck::kNumDecodeTokens:
    case MetadataCheck::kDecodeBoundary: return MetadataField::kNumDecodeTokens;
    case MetadataCheck::kPrefillRows: return MetadataField::kPrefillTopkRows;
    case MetadataCheck::kQueryStartFirst:
    case MetadataCheck::kQueryStartDecreasing:
    case MetadataCheck::kQueryStartEnd: return MetadataField::kQueryStartLoc;
    case MetadataCheck::kTokenRequestRange:
    case MetadataCheck::kTokenRequestMismatch: return MetadataField::kTokenToReq;
    case MetadataCheck::kSeqLenBelowQuery:
    case MetadataCheck::kSeqLenAboveCapacity: return MetadataField::kSeqLens;
    case MetadataCheck::kDecodeCompressedLens: return MetadataField::kDecodeCompressedLens;
  }
  return MetadataField::kNone;
}

}  // namespace dsv4::kernels
