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
#include "kernels/power_of_two_table.h"
#include "kernels/row_output.h"

namespace dsv4::kernels {

// A window-only decode build (Kd = 0: SWA-only layers) reads only these: 88 bytes.
struct WindowDecodeArgs {
  const int32_t* token_to_req;
  const int32_t* decode_swa_indices;
  int64_t decode_swa_stride;
  RowOutput out;
  int32_t window, num_requests, num_tokens, row_width, output_stride;

  DSV4_HD static WindowDecodeArgs of(const MixedSparseIndicesArgs& a) {
    return WindowDecodeArgs{a.token_to_req, a.decode_swa_indices, a.decode_swa_stride, RowOutput::of(a), a.window,
                            a.num_requests, a.num_tokens, a.row_width, a.output_stride};
  }

  // The decode-only build these arguments describe, as the row logic reads it: every row a
  // decode row without compressed columns, no block table read (a decode row copies its
  // window), the 16-byte path.
  DSV4_HD MixedSparseIndicesArgs expand() const {
    MixedSparseIndicesArgs a{};
    a.window = window;
    a.num_requests = num_requests;
    a.num_tokens = a.num_decode_tokens = a.num_rows = num_tokens;
    a.row_width = row_width;
    a.token_to_req = token_to_req;
    a.decode_swa_indices = decode_swa_indices;
    a.decode_swa_stride = decode_swa_stride;
    a.output_stride = output_stride;
    out.expand_into(a);
    a.power_of_two_blocks = true;
    a.vector_path = true;
    return a;
  }
};

// Any decode-chunk build: the window part's fields and the compressed columns'.
struct DecodeChunkArgs {
  WindowDecodeArgs rows;
  const int32_t* decode_compressed;
  const int32_t* decode_compressed_lens;
  const uint8_t* decode_valid;
  int64_t decode_compressed_stride;
  PowerOfTwoTable compressed;
  int32_t decode_width;
  bool decode_local;

  // `a` is a decode-only build on the power-of-two, 16-byte path (the decode-chunk shape).
  DSV4_HD static DecodeChunkArgs of(const MixedSparseIndicesArgs& a) {
    return DecodeChunkArgs{WindowDecodeArgs::of(a), a.decode_compressed, a.decode_compressed_lens, a.decode_valid,
                           a.decode_compressed_stride, PowerOfTwoTable::of(a.compressed), a.decode_width,
                           a.decode_local};
  }

  // The decode-only build these arguments describe: the window part's, with the compressed
  // columns' inputs and their table on its shift/mask path.
  DSV4_HD MixedSparseIndicesArgs expand() const {
    MixedSparseIndicesArgs a = rows.expand();
    a.decode_compressed = decode_compressed;
    a.decode_compressed_stride = decode_compressed_stride;
    a.decode_width = decode_width;
    a.decode_local = decode_local;
    a.decode_compressed_lens = decode_compressed_lens;
    a.decode_valid = decode_valid;
    a.compressed = compressed.view(rows.num_requests);
    return a;
  }
};

static_assert(std::is_trivially_copyable_v<DecodeChunkArgs> && std::is_standard_layout_v<DecodeChunkArgs>,
              "kernel arguments must be a POD");
static_assert(sizeof(DecodeChunkArgs) <= 160 && sizeof(WindowDecodeArgs) <= 88,
              "the point of these arguments is a short launch");
static_assert(std::is_trivially_copyable_v<WindowDecodeArgs> && std::is_standard_layout_v<WindowDecodeArgs>,
              "kernel arguments must be a POD");

}  // namespace dsv4::kernels
