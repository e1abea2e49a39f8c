// The fewest bytes one build must move through memory: each input it needs read once, each
// output written once. The denominator of the kernel benchmark's GB/s.
#pragma once
#include <cstdint>

#include "reference/mixed_sparse_indices.h"

namespace dsv4::bench {

struct BuildBytes {
  int64_t outputs = 0;         // T*(W+P)*4 sparse_indices + T*4 sparse_lens
  int64_t decode_inputs = 0;   // D*W*4 SWA + D*Kd*4 compressed + D*4 lens + D*1 valid
  int64_t prefill_topk = 0;    // sum over prefill tokens of min(Kp, topk_len(t)) * 4
  int64_t metadata = 0;        // (R+1)*4 query_start_loc + R*4 seq_lens + T*4 token_to_req
  int64_t block_tables = 0;    // 4 per distinct (table, request, block) entry referenced
  // Of the inputs above, those whose values are translated through a block table (each output
  // column needs its input's value before its table entry): prefill_topk, and a local-form
  // decode row's D*Kd*4 compressed inputs. A part of the inputs, not counted again by total().
  int64_t translated_inputs = 0;
  int64_t total() const { return outputs + decode_inputs + prefill_topk + metadata + block_tables; }
};

// Counts the bytes of SPEC §3 for `in` (which must be valid):
//   outputs       = T*(W+P)*4 + T*4
//   decode_inputs = D*W*4 + D*Kd*4 + (lens given ? D*4 : 0) + (local form, valid given ? D : 0)
//   prefill_topk  = sum_{prefill t} min(Kp, topk_len(t))*4, topk_len = min((pos+1)/ratio, topk)
//                   (entries past topk_len are never read)
//   metadata      = (R+1)*4 + R*4 + T*4
//   block_tables  = 4 * |{(table, r, j)}|: block j of request r's row is looked up by some
//                   prefill SWA column (positions start..pos), some prefill compressed entry
//                   v >= 0, or (local decode form) some decode compressed entry v >= 0 —
//                   each referenced entry counted once however often it is used.
//   translated_inputs = prefill_topk + (local form ? D*Kd*4 : 0)
// Decode SWA columns and global-form decode entries are copied, not translated: no table read.
BuildBytes build_bytes(const ref::BuilderInputs& in);

// SPEC §8: the bytes of a build of part of each row. kWindow (the SWA segment, or a tail-only
// buffer's window columns): the window columns (no lengths), the decode SWA rows, the metadata
// and the SWA entries the prefill window columns look up. kCompressed (a split compressed
// segment or a tail-only build): the compressed columns and the lengths, the decode compressed
// inputs, prefill_topk, the metadata and the compressed entries. Each build reads the metadata.
enum class BuildColumns { kWhole, kWindow, kCompressed };
BuildBytes build_bytes(const ref::BuilderInputs& in, BuildColumns columns);

}  // namespace dsv4::bench
