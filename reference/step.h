// One engine step as the reference sees it (SPEC §2) and the per-step metadata
// an engine computes from it (SPEC §6).
#pragma once
#include <string>

#include "reference/mixed_sparse_indices.h"

namespace dsv4::ref {

// Everything the layers of one step share. Decode requests come first.
struct Step {
  IndexVector query_start_loc;        // R+1
  IndexVector seq_lens;               // R
  IndexVector token_to_req;           // T
  int32_t num_decode_tokens = 0;      // D: tokens of the decode requests (a request boundary)
  std::vector<uint8_t> decode_valid;  // D; 0 marks a padding token (all-ones when empty)
  PagedCache swa;                     // SWA cache, block size 64 in production
  PagedCache c4a;                     // ratio-4 compressed cache (block size main/4)
  PagedCache c128a;                   // ratio-128 compressed cache (block size main/128)
  int32_t max_model_len = 1 << 20;

  int32_t num_requests() const { return static_cast<int32_t>(seq_lens.size()); }
  int32_t num_tokens() const { return static_cast<int32_t>(token_to_req.size()); }
};

// pos(t) of SPEC §2.
int32_t token_position(const Step& step, int32_t t);

// SPEC §6: decode SWA indices, D x W.
IndexMatrix decode_swa_indices(const Step& step, int32_t window);

// SPEC §6: C128A metadata of one step.
struct C128aMetadata {
  int32_t effective_width = 0;  // E
  IndexMatrix decode_global;    // D x E, global slots, -1 after n(t)
  IndexVector decode_lens;      // D, n(t) (0 for padding tokens)
  IndexMatrix prefill_local;    // (T-D) x E, 0..n(t)-1 then -1
};
// E = min(max_compressed, round_up(max((max_pos + 1) / 128, 1), 128)); max_pos = -1 when T == 0.
int32_t c128a_effective_width(int32_t max_pos, int32_t max_model_len);
C128aMetadata c128a_metadata(const Step& step);

// One C4A layer's indexer output (SPEC §6): local compressed indices, -1 padded.
struct C4aIndexerOutput {
  IndexMatrix decode_local;   // D x K
  IndexMatrix prefill_topk;   // (T-D) x K
};

}  // namespace dsv4::ref
