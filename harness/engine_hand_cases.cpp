#include "harness/engine_hand_cases.h"

#include <climits>

namespace dsv4::harness {
namespace {

ref::BuilderOutput out(ref::IndexMatrix indices, ref::IndexVector lens, int64_t errors = 0) {
  return ref::BuilderOutput{std::move(indices), std::move(lens), errors};
}

// One prefill token at position 5 (seq_len 6), W = 4, ratio 1, no compressed columns; SWA
// block size 4 over table row [3, 7]: the window holds positions 2, 3 (block 0, offsets 2, 3)
// and 4, 5 (block 1, offsets 0, 1).
ref::BuilderInputs window_over_two_blocks() {
  ref::BuilderInputs in;
  in.window = 4;
  in.ratio = 1;
  in.decode_swa_indices = ref::IndexMatrix(0, 4);
  in.prefill_topk = ref::IndexMatrix(1, 0);
  in.query_start_loc = vec({0, 1});
  in.seq_lens = vec({6});
  in.token_to_req = vec({0});
  in.swa = ref::PagedCache{mat(1, 2, {3, 7}), 4};
  return in;
}

}  // namespace

std::vector<HandCase> engine_hand_cases() {
  std::vector<HandCase> cases;
  auto add = [&cases](std::string name, ref::BuilderInputs in, ref::BuilderOutput expected) {
    cases.push_back(HandCase{std::move(name), std::move(in), std::move(expected)});
  };

  // Without span or offset: 3 * 4 + {2, 3}, 7 * 4 + {0, 1}.
  add("window over two blocks", window_over_two_blocks(), out(mat(1, 4, {14, 15, 28, 29}), vec({4})));
  {  // Span 10, offset 1000: 1000 + 3 * 10 + {2, 3}, 1000 + 7 * 10 + {0, 1}.
    ref::BuilderInputs in = window_over_two_blocks();
    in.swa.block_span = 10;
    in.swa.base_offset = 1000;
    add("block span and base offset", in, out(mat(1, 4, {1032, 1033, 1070, 1071}), vec({4})));
  }
  {  // Span = B given explicitly is the default.
    ref::BuilderInputs in = window_over_two_blocks();
    in.swa.block_span = 4;
    add("block span equal to the block size", in, out(mat(1, 4, {14, 15, 28, 29}), vec({4})));
  }
  {  // O = 2^31 - 29, table [0, 7]: O + {2, 3} fit, O + 7 * 4 + 0 = 2^31 - 1 fits, O + 28 + 1
    // = 2^31 does not (one error). Without the offset every slot is below 30.
    ref::BuilderInputs in = window_over_two_blocks();
    in.swa.block_table = mat(1, 2, {0, 7});
    in.swa.base_offset = INT32_MAX - 28;  // 2^31 - 29
    add("a slot past int32 only because of the base offset", in,
        out(mat(1, 4, {INT32_MAX - 26, INT32_MAX - 25, INT32_MAX, -1}), vec({4}), 1));
  }
  {  // A negative offset, span 10, table [0, 7]: -30 + 0 + {2, 3} < 0 is outside [0, 2^31)
    // (two errors); -30 + 7 * 10 + {0, 1} = 40, 41.
    ref::BuilderInputs in = window_over_two_blocks();
    in.swa.block_span = 10;
    in.swa.base_offset = -30;
    in.swa.block_table = mat(1, 2, {0, 7});
    add("a slot below 0 because of a negative base offset", in, out(mat(1, 4, {-1, -1, 40, 41}), vec({4}), 2));
  }
  {  // Span 2^30 (a 64-bit product): block 3 -> 3 * 2^30 + 2 is past int32, block 0 fits.
    // Table [1, 0]: 2^30 + {2, 3}; 0 + {0, 1}.
    ref::BuilderInputs in = window_over_two_blocks();
    in.swa.block_span = 1 << 30;
    in.swa.block_table = mat(1, 2, {1, 0});
    add("a span whose product needs 64 bits", in, out(mat(1, 4, {(1 << 30) + 2, (1 << 30) + 3, 0, 1}), vec({4})));
    in.swa.block_table = mat(1, 2, {3, 0});
    add("a span taking a slot past int32", in, out(mat(1, 4, {-1, -1, 0, 1}), vec({4}), 2));
  }
  {  // A persistent [max_num_reqs][max_blocks] table: rows past R = 1 are never read (-1 and
    // garbage there change nothing).
    ref::BuilderInputs in = window_over_two_blocks();
    in.swa.block_table = mat(3, 2, {3, 7, -1, -1, INT32_MIN, 99});
    add("a block table with more rows than R", in, out(mat(1, 4, {14, 15, 28, 29}), vec({4})));
  }
  {  // Compressed span and offset on the tiny C4A batch: compressed block size 2, span 5,
    // offset 100, table [[0, 1], [2, 3]], plus a third table row that is never read.
    //   t0: local 2 -> block 1 of request 0: 100 + 1 * 5 + 0 = 105
    //   t1: locals 0, 1 -> block 0 of request 1: 100 + 2 * 5 + {0, 1} = 110, 111
    //   t2: locals 1, 2 -> 111, then block 1: 100 + 3 * 5 + 0 = 115
    ref::BuilderInputs in = tiny_c4a();
    in.compressed->block_table = mat(3, 2, {0, 1, 2, 3, -7, -7});
    in.compressed->block_span = 5;
    in.compressed->base_offset = 100;
    ref::IndexMatrix indices = mat(3, 8, {5, 6, -1, -1, 105, -1, -1, -1,             //
                                          133, 134, 135, 136, 110, 111, -1, -1,    //
                                          134, 135, 136, 137, 111, 115, -1, -1});
    add("compressed span and offset", in, out(indices, vec({5, 6, 6})));
  }
  {  // Row capacity 5 for T = 3: rows 3 and 4 are padding, -1 with length 0.
    ref::BuilderInputs in = tiny_c4a();
    in.row_capacity = 5;
    add("padded rows", in,
        out(mat(5, 8, {5,   6,   -1,  -1,  2,  -1, -1, -1,  //
                       133, 134, 135, 136, 4,  5,  -1, -1,  //
                       134, 135, 136, 137, 5,  6,  -1, -1,  //
                       -1,  -1,  -1,  -1,  -1, -1, -1, -1,  //
                       -1,  -1,  -1,  -1,  -1, -1, -1, -1}),
            vec({5, 6, 6, 0, 0})));
  }
  {  // Compressed capacity 12 > P = 4: columns W + 4 .. W + 11 are -1, lengths unchanged.
    ref::BuilderInputs in = tiny_c4a();
    in.compressed_capacity = 12;
    ref::IndexMatrix indices = ref::IndexMatrix::Constant(3, 16, -1);
    indices.row(0).head(8) = mat(1, 8, {5, 6, -1, -1, 2, -1, -1, -1});
    indices.row(1).head(8) = mat(1, 8, {133, 134, 135, 136, 4, 5, -1, -1});
    indices.row(2).head(8) = mat(1, 8, {134, 135, 136, 137, 5, 6, -1, -1});
    add("compressed capacity past P", in, out(indices, vec({5, 6, 6})));
  }
  {  // A global-form decode row keeps its values within a wider capacity: tiny C128A, P_cap 8.
    ref::BuilderInputs in = tiny_c128a();
    in.compressed_capacity = 8;
    in.row_capacity = 4;
    ref::IndexMatrix indices = ref::IndexMatrix::Constant(4, 12, -1);
    indices.row(0).head(6) = mat(1, 6, {5, 6, -1, -1, 9, 10});
    indices.row(1).head(4) = mat(1, 4, {133, 134, 135, 136});
    indices.row(2).head(4) = mat(1, 4, {134, 135, 136, 137});
    add("global decode in a wider, padded output", in, out(indices, vec({6, 4, 4, 0})));
  }
  return cases;
}

}  // namespace dsv4::harness
