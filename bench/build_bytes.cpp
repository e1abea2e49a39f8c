#include "bench/build_bytes.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace dsv4::bench {
namespace {

// Marks the distinct block-table entries one request references in one table.
class ReferencedBlocks {
 public:
  explicit ReferencedBlocks(const ref::PagedCache& cache)
      : cache_(cache), seen_(static_cast<size_t>(cache.block_table.cols()), 0) {}
  void start_request() {
    std::fill(seen_.begin(), seen_.end(), uint8_t{0});
  }
  // Local index i of the current request (token position for SWA, compressed index else).
  void reference(int64_t i) {
    if (i < 0) return;
    const int64_t j = i / cache_.block_size;
    if (j >= static_cast<int64_t>(seen_.size())) return;  // a content error: no read counted
    if (seen_[static_cast<size_t>(j)] == 0) {
      seen_[static_cast<size_t>(j)] = 1;
      ++entries_;
    }
  }
  int64_t entries() const { return entries_; }

 private:
  const ref::PagedCache& cache_;
  std::vector<uint8_t> seen_;
  int64_t entries_ = 0;
};

}  // namespace

BuildBytes build_bytes(const ref::BuilderInputs& in) { return build_bytes(in, BuildColumns::kWhole); }

BuildBytes build_bytes(const ref::BuilderInputs& in, BuildColumns columns) {
  const bool window = columns != BuildColumns::kCompressed;
  const bool compressed = columns != BuildColumns::kWindow;
  const int64_t T = in.token_to_req.size();
  const int64_t R = in.seq_lens.size();
  const int64_t D = in.decode_swa_indices.rows();
  const int64_t W = in.window;
  const int64_t Kd = in.decode_compressed.cols();
  const int64_t Kp = in.prefill_topk.cols();
  const int64_t P = ref::padded_compressed_width(in.topk, static_cast<int32_t>(Kd));

  BuildBytes b;
  b.outputs = T * ((window ? W : 0) + (compressed ? P + 1 : 0)) * 4;  // + 1: the length
  b.decode_inputs = (window ? D * W * 4 : 0);
  if (compressed) {
    b.decode_inputs += D * Kd * 4;
    if (in.decode_local) b.translated_inputs += D * Kd * 4;
    if (in.decode_compressed_lens) b.decode_inputs += D * 4;
    if (in.decode_local && in.decode_valid) b.decode_inputs += D;
  }
  b.metadata = (R + 1) * 4 + R * 4 + T * 4;

  // Without a compressed table the compressed entries index the SWA table: one tracker.
  ReferencedBlocks swa_blocks(in.swa);
  std::optional<ReferencedBlocks> own_compressed;
  if (in.compressed) own_compressed.emplace(*in.compressed);
  ReferencedBlocks& compressed_blocks = own_compressed ? *own_compressed : swa_blocks;
  for (int32_t r = 0; r < R; ++r) {
    swa_blocks.start_request();
    if (own_compressed) own_compressed->start_request();
    const int32_t begin = in.query_start_loc(r), end = in.query_start_loc(r + 1);
    for (int32_t t = begin; t < end; ++t) {
      if (t < D) {
        if (!in.decode_local || !compressed) continue;
        for (int64_t j = 0; j < Kd; ++j) compressed_blocks.reference(in.decode_compressed(t, j));
        continue;
      }
      const int64_t pos = static_cast<int64_t>(in.seq_lens(r)) - (end - begin) + (t - begin);
      const int64_t swa_len = std::min<int64_t>(pos + 1, W);
      if (window) {
        for (int64_t p = pos - swa_len + 1; p <= pos; ++p) swa_blocks.reference(p);
      }
      if (!compressed) continue;
      const int64_t topk_len = std::min<int64_t>((pos + 1) / in.ratio, in.topk);
      const int64_t needed = std::min(topk_len, Kp);
      b.prefill_topk += needed * 4;
      for (int64_t j = 0; j < needed; ++j) compressed_blocks.reference(in.prefill_topk(t - D, j));
    }
  }
  b.translated_inputs += b.prefill_topk;
  b.block_tables = (swa_blocks.entries() + (own_compressed ? own_compressed->entries() : 0)) * 4;
  return b;
}

}  // namespace dsv4::bench
