// The upstream cache test's tiny batch (vLLM test_flashinfer_sparse_indices_cache), as the
// builder inputs of one SWA-only, one C128A and one C4A layer.
//
//   window W = 4, SWA block size 64, block tables [[0, 1], [2, 3]]
//   request 0: one decode token (t = 0), seq_len 2, SWA row [5, 6, -1, -1]
//   request 1: two prefill tokens (t = 1, 2), seq_len 10 -> positions 8 and 9
//   query_start_loc [0, 1, 3], token_to_req [0, 1, 1], D = 1, T = 3
#pragma once
#include "tests/reference/reference_test_util.h"

namespace dsv4::ref::testing {

inline BuilderInputs tiny_batch_swa_only() {
  BuilderInputs in;
  in.window = 4;
  in.ratio = 1;
  in.topk = 0;
  in.decode_swa_indices = mat(1, 4, {5, 6, -1, -1});
  in.prefill_topk = mat(2, 0, {});
  in.query_start_loc = vec({0, 1, 3});
  in.seq_lens = vec({2, 10});
  in.token_to_req = vec({0, 1, 1});
  in.swa.block_table = mat(2, 2, {0, 1,  //
                                  2, 3});
  in.swa.block_size = 64;
  return in;
}

// C128A: global decode slots [9, 10] with lens 2; prefill local indices [[0, 1], [1, 2]];
// compressed cache = the same table with block size 2; topk 2.
inline BuilderInputs tiny_batch_c128a() {
  BuilderInputs in = tiny_batch_swa_only();
  in.ratio = 128;
  in.topk = 2;
  in.decode_compressed = mat(1, 2, {9, 10});
  in.decode_local = false;
  in.decode_compressed_lens = vec({2});
  in.prefill_topk = mat(2, 2, {0, 1,  //
                               1, 2});
  in.compressed = PagedCache{mat(2, 2, {0, 1, 2, 3}), 2};
  return in;
}

// C4A: the decode token's indexer picked local index 2 (then -1); prefill picks as C128A;
// compressed cache = the same table with block size 2; topk 2.
inline BuilderInputs tiny_batch_c4a() {
  BuilderInputs in = tiny_batch_swa_only();
  in.ratio = 4;
  in.topk = 2;
  in.decode_compressed = mat(1, 2, {2, -1});
  in.decode_local = true;
  in.decode_valid = std::vector<uint8_t>{1};
  in.prefill_topk = mat(2, 2, {0, 1,  //
                               1, 2});
  in.compressed = PagedCache{mat(2, 2, {0, 1, 2, 3}), 2};
  return in;
}

}  // namespace dsv4::ref::testing
