// The argument of an unchecked decode-chunk build (host sizes, decode-only rows, power-of-two
// blocks, 16-byte path): the fields of MixedSparseIndicesArgs such a build reads, 160 bytes
// instead of 368. A kernel's argument is copied at every launch, and the size shows in short
// builds: on an H200 the decode builds launched alone took 0.14-0.35 us less with this
// argument than with the whole struct (bench/results/2026-12-03-h200-compact-decode-args-trial/).
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/host_device.h"
#include "kernels/mixed_sparse_indices_args.h"

namespace dsv4::kernels {

struct DecodeChunkArgs {
  const int32_t* token_to_req;
  const int32_t* decode_swa_indices;
  const int32_t* decode_compressed;
  const int32_t* decode_compressed_lens;
  const uint8_t* decode_valid;
  const int32_t* compressed_table;
  int32_t* sparse_indices;
  int32_t* sparse_lens;
  unsigned long long* content_errors;
  int64_t decode_swa_stride;
  int64_t decode_compressed_stride;
  int64_t compressed_row_stride;
  int32_t window, num_requests, num_tokens, row_width, decode_width, output_stride;
  int32_t first_column, end_column, output_shift, length_offset;  // SPEC §8 part (whole row: 0, row_width, 0, 0)
  int32_t compressed_blocks_per_row, compressed_block_size;
  uint32_t compressed_log2_block_size, compressed_max_safe_block;
  bool decode_local;

  // `a` is a decode-only build on the power-of-two, 16-byte path (the decode-chunk shape).
  DSV4_HD static DecodeChunkArgs of(const MixedSparseIndicesArgs& a) {
    const BlockTableView& c = a.compressed;
    return DecodeChunkArgs{a.token_to_req, a.decode_swa_indices, a.decode_compressed, a.decode_compressed_lens,
                           a.decode_valid, c.table, a.sparse_indices, a.sparse_lens, a.content_errors,
                           a.decode_swa_stride, a.decode_compressed_stride, c.row_stride, a.window, a.num_requests,
                           a.num_tokens, a.row_width, a.decode_width, a.output_stride, a.first_column, a.end_column,
                           a.output_shift, a.length_offset, c.blocks_per_row, c.block_size, c.log2_block_size,
                           c.max_safe_block, a.decode_local};
  }

  // The decode-only build these arguments describe, as the row logic reads it: every row a
  // decode row, the compressed table on its shift/mask path (no span, offset or divider), no
  // SWA table (a decode row copies its window) and no prefill input.
  DSV4_HD MixedSparseIndicesArgs expand() const {
    MixedSparseIndicesArgs a{};
    a.window = window;
    a.num_requests = num_requests;
    a.num_tokens = a.num_decode_tokens = a.num_rows = num_tokens;
    a.row_width = row_width;
    a.token_to_req = token_to_req;
    a.decode_swa_indices = decode_swa_indices;
    a.decode_swa_stride = decode_swa_stride;
    a.decode_compressed = decode_compressed;
    a.decode_compressed_stride = decode_compressed_stride;
    a.decode_width = decode_width;
    a.decode_local = decode_local;
    a.decode_compressed_lens = decode_compressed_lens;
    a.decode_valid = decode_valid;
    BlockTableView& c = a.compressed;
    c.table = compressed_table;
    c.num_rows = num_requests;
    c.blocks_per_row = compressed_blocks_per_row;
    c.block_size = compressed_block_size;
    c.row_stride = compressed_row_stride;
    c.block_span = compressed_block_size;
    c.power_of_two = true;
    c.log2_block_size = compressed_log2_block_size;
    c.max_safe_block = compressed_max_safe_block;
    const uint32_t index_blocks = (uint32_t{1} << 31) >> compressed_log2_block_size;
    c.index_block_bound = static_cast<uint32_t>(compressed_blocks_per_row) < index_blocks
                              ? static_cast<uint32_t>(compressed_blocks_per_row)
                              : index_blocks;
    a.sparse_indices = sparse_indices;
    a.output_stride = output_stride;
    a.sparse_lens = sparse_lens;
    a.first_column = first_column;
    a.end_column = end_column;
    a.output_shift = output_shift;
    a.length_offset = length_offset;
    a.content_errors = content_errors;
    a.power_of_two_blocks = true;
    a.vector_path = true;
    return a;
  }
};

static_assert(std::is_trivially_copyable_v<DecodeChunkArgs> && std::is_standard_layout_v<DecodeChunkArgs>,
              "kernel arguments must be a POD");
static_assert(sizeof(DecodeChunkArgs) <= 160, "the point of DecodeChunkArgs is a short launch argument");

}  // namespace dsv4::kernels
