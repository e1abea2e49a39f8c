#include "harness/hand_cases.h"

#include <stdexcept>

namespace dsv4::harness {
namespace {

ref::BuilderOutput out(ref::IndexMatrix indices, ref::IndexVector lens, int64_t errors = 0) {
  return ref::BuilderOutput{std::move(indices), std::move(lens), errors};
}

// One prefill request of `tokens` tokens, seq_len `seq_len`, no decode token.
ref::BuilderInputs prefill_only(int32_t window, int32_t ratio, int32_t topk, int32_t tokens, int32_t seq_len) {
  ref::BuilderInputs in;
  in.window = window;
  in.ratio = ratio;
  in.topk = topk;
  in.decode_swa_indices = ref::IndexMatrix(0, window);
  in.query_start_loc = vec({0, tokens});
  in.seq_lens = vec({seq_len});
  in.token_to_req = ref::IndexVector::Zero(tokens);
  return in;
}

// topk 5 -> P = round_up(5, 4) = 8. One prefill token at pos 23, ratio 4; SWA block size 8,
// table [3, 0, 7]; compressed block size 4, table [5, 1]; Kp = 6 picks.
// topk_len = min(24 / 4, 5) = 5: 0 -> 5 * 4 = 20, 4 -> 1 * 4 = 4, 5 -> 5, 7 -> 7, 3 -> 23;
// the 6th pick (2) is past topk_len -> -1, and so are the columns after it.
ref::BuilderInputs topk_five(int32_t window) {
  ref::BuilderInputs in = prefill_only(window, 4, 5, 1, 24);
  in.prefill_topk = mat(1, 6, {0, 4, 5, 7, 3, 2});
  in.swa = ref::PagedCache{mat(1, 3, {3, 0, 7}), 8};
  in.compressed = ref::PagedCache{mat(1, 2, {5, 1}), 4};
  return in;
}

// All-decode step (D = T = 2), global form. W = 2, topk 0, Kd 3 -> P = 4. Global slots are
// written as-is, -1 and anything after it included (20, -1, 7).
ref::BuilderInputs all_decode_global() {
  ref::BuilderInputs in;
  in.window = 2;
  in.ratio = 128;
  in.decode_swa_indices = mat(2, 2, {1, 2, 3, -1});
  in.decode_compressed = mat(2, 3, {10, 11, -1,  //
                                    20, -1, 7});
  in.prefill_topk = ref::IndexMatrix(0, 0);
  in.query_start_loc = vec({0, 1, 2});
  in.seq_lens = vec({5, 3});
  in.token_to_req = vec({0, 1});
  in.swa = ref::PagedCache{mat(2, 1, {0, 1}), 8};
  in.compressed = ref::PagedCache{mat(2, 1, {0, 1}), 2};
  return in;
}

// Local decode form: request 0 is speculative (t = 0, 1), request 1 holds one padding token
// (t = 2, decode_valid 0). W = 2, topk 0, Kd 3 -> P = 4. Compressed block size 4: request 0
// table [2, 9], request 1 table [7, 1].
//   t = 0: [0, 3, -1] -> 2 * 4 + 0 = 8, 2 * 4 + 3 = 11, -1; 2 picks -> len 4
//   t = 1: [1, -1, -1] -> 9; 1 pick -> len 3
//   t = 2: [5, 0, -1] -> 1 * 4 + 1 = 5, 7 * 4 + 0 = 28 (translated whatever decode_valid
//          says); a padding token's compressed length is 0 -> len 2
ref::BuilderInputs local_decode_with_padding() {
  ref::BuilderInputs in;
  in.window = 2;
  in.ratio = 4;
  in.decode_swa_indices = mat(3, 2, {4, 5, 5, 6, -1, -1});
  in.decode_compressed = mat(3, 3, {0, 3, -1,   //
                                    1, -1, -1,  //
                                    5, 0, -1});
  in.decode_local = true;
  in.decode_valid = std::vector<uint8_t>{1, 1, 0};
  in.prefill_topk = ref::IndexMatrix(0, 0);
  in.query_start_loc = vec({0, 2, 3});
  in.seq_lens = vec({7, 1});
  in.token_to_req = vec({0, 0, 1});
  in.swa = ref::PagedCache{mat(2, 1, {0, 1}), 8};
  in.compressed = ref::PagedCache{mat(2, 2, {2, 9, 7, 1}), 4};
  return in;
}

// Tiny C4A with one change; the helpers below keep each case to its point.
template <class Change>
ref::BuilderInputs tiny_c4a_with(Change change) {
  ref::BuilderInputs in = tiny_c4a();
  change(in);
  return in;
}

// The tiny C4A batch's output rows, the base of the SPEC §4 cases:
//   t0: 5 6 -1 -1 | 2 -1 -1 -1        len 5 (local 2 -> table[0][1] * 2 + 0 = 2; one pick)
//   t1: 133 134 135 136 | 4 5 -1 -1   len 6 (pos 8: window 5..8 in block 0 of request 1
//                                      = 2 * 64 + i; topk_len min(9 / 4, 2) = 2: 0 -> 4, 1 -> 5)
//   t2: 134 135 136 137 | 5 6 -1 -1   len 6 (pos 9: 1 -> 5, 2 -> table[1][1] * 2 = 6)
constexpr std::initializer_list<int32_t> kTinyC4aRow1 = {133, 134, 135, 136, 4, 5, -1, -1};

ref::IndexMatrix rows(std::initializer_list<std::initializer_list<int32_t>> row_list) {
  ref::IndexMatrix m(static_cast<Eigen::Index>(row_list.size()), static_cast<Eigen::Index>(row_list.begin()->size()));
  Eigen::Index r = 0;
  for (const auto& row : row_list) m.row(r++) = mat(1, m.cols(), row);
  return m;
}

}  // namespace

ref::IndexVector vec(std::initializer_list<int32_t> values) {
  ref::IndexVector v(static_cast<Eigen::Index>(values.size()));
  Eigen::Index i = 0;
  for (int32_t x : values) v(i++) = x;
  return v;
}

ref::IndexMatrix mat(Eigen::Index rows, Eigen::Index cols, std::initializer_list<int32_t> values) {
  if (static_cast<Eigen::Index>(values.size()) != rows * cols) {
    throw std::logic_error("mat(): " + std::to_string(values.size()) + " literal values for " +
                           std::to_string(rows) + " x " + std::to_string(cols));
  }
  ref::IndexMatrix m(rows, cols);
  Eigen::Index i = 0;
  for (int32_t x : values) {
    m(i / cols, i % cols) = x;
    ++i;
  }
  return m;
}

ref::BuilderInputs tiny_swa_only() {
  ref::BuilderInputs in;
  in.window = 4;
  in.ratio = 1;
  in.topk = 0;
  in.decode_swa_indices = mat(1, 4, {5, 6, -1, -1});
  in.prefill_topk = ref::IndexMatrix(2, 0);
  in.query_start_loc = vec({0, 1, 3});
  in.seq_lens = vec({2, 10});
  in.token_to_req = vec({0, 1, 1});
  in.swa = ref::PagedCache{mat(2, 2, {0, 1, 2, 3}), 64};
  return in;
}

ref::BuilderInputs tiny_c128a() {
  ref::BuilderInputs in = tiny_swa_only();
  in.ratio = 128;
  in.topk = 2;
  in.decode_compressed = mat(1, 2, {9, 10});
  in.decode_local = false;
  in.decode_compressed_lens = vec({2});
  in.prefill_topk = mat(2, 2, {0, 1, 1, 2});
  in.compressed = ref::PagedCache{mat(2, 2, {0, 1, 2, 3}), 2};
  return in;
}

ref::BuilderInputs tiny_c4a() {
  ref::BuilderInputs in = tiny_c128a();
  in.ratio = 4;
  in.decode_compressed = mat(1, 2, {2, -1});
  in.decode_local = true;
  in.decode_compressed_lens.reset();
  in.decode_valid = std::vector<uint8_t>{1};
  return in;
}

std::vector<HandCase> hand_cases() {
  std::vector<HandCase> cases;
  auto add = [&cases](std::string name, ref::BuilderInputs in, ref::BuilderOutput expected) {
    cases.push_back(HandCase{std::move(name), std::move(in), std::move(expected)});
  };

  // SWA-only: P = 0. t0: the SWA row copied, len W = 4. t1, t2 (pos 8, 9): windows 5..8 and
  // 6..9 in request 1's block 0 (physical 2): 2 * 64 + i.
  add("tiny SWA-only", tiny_swa_only(),
      out(rows({{5, 6, -1, -1}, {133, 134, 135, 136}, {134, 135, 136, 137}}), vec({4, 4, 4})));
  // C128A: P = 4. t0: global [9, 10] copied, len 4 + lens 2. t1, t2: (p + 1) / 128 = 0 -> no
  // picks, the local indices are never read.
  add("tiny C128A", tiny_c128a(),
      out(rows({{5, 6, -1, -1, 9, 10, -1, -1}, {133, 134, 135, 136, -1, -1, -1, -1},
                {134, 135, 136, 137, -1, -1, -1, -1}}),
          vec({6, 4, 4})));
  add("tiny C4A", tiny_c4a(),
      out(rows({{5, 6, -1, -1, 2, -1, -1, -1}, kTinyC4aRow1, {134, 135, 136, 137, 5, 6, -1, -1}}), vec({5, 6, 6})));
  // No compressed cache: the SWA table with block size 64 (SPEC §2). t0: local 2 -> 0 * 64 + 2;
  // t1: 0, 1 -> 2 * 64 + {0, 1}; t2: 1, 2 -> 129, 130.
  add("tiny C4A without a compressed cache", tiny_c4a_with([](auto& in) { in.compressed.reset(); }),
      out(rows({{5, 6, -1, -1, 2, -1, -1, -1}, {133, 134, 135, 136, 128, 129, -1, -1},
                {134, 135, 136, 137, 129, 130, -1, -1}}),
          vec({5, 6, 6})));

  // W = 3 (the kernels' scalar path): start = 23 - 3 + 1 = 21, block 2: 7 * 8 + {5, 6, 7};
  // width 3 + 8, len 3 + 5.
  add("top-k 5 with window 3", topk_five(3), out(mat(1, 11, {61, 62, 63, 20, 4, 5, 7, 23, -1, -1, -1}), vec({8})));
  // W = 4: start 20, block 2: 7 * 8 + {4, 5, 6, 7}; width 4 + 8, len 4 + 5.
  add("top-k 5 with window 4", topk_five(4),
      out(mat(1, 12, {60, 61, 62, 63, 20, 4, 5, 7, 23, -1, -1, -1}), vec({9})));

  // All prefill, positions 1..5 around W = 4; SWA block size 4, table [2, 0]: i < 4 -> 8 + i,
  // i >= 4 -> i - 4 (the windows of positions 4 and 5 cross the block boundary).
  //   pos 1: swa_len 2, start 0; pos 2: 3, 0; pos 3: 4, 0; pos 4: 4, 1; pos 5: 4, 2.
  {
    ref::BuilderInputs in = prefill_only(4, 1, 0, 5, 6);
    in.prefill_topk = ref::IndexMatrix(5, 0);
    in.swa = ref::PagedCache{mat(1, 2, {2, 0}), 4};
    add("prefill windows around W across SWA blocks", in,
        out(rows({{8, 9, -1, -1}, {8, 9, 10, -1}, {8, 9, 10, 11}, {9, 10, 11, 0}, {10, 11, 0, 1}}),
            vec({4, 4, 4, 4, 4})));
  }
  // (p + 1) at and around a multiple of the ratio: W = 2, ratio 4, topk 4, positions 6, 7, 8.
  // SWA block size 16, table [1] -> 16 + i. Compressed block size 2, table [4, 6]: local
  // 0 -> 8, 1 -> 9, 2 -> 12, 3 -> 13.
  //   pos 6: topk_len min(7 / 4, 4) = 1 -> 8; pos 7: 8 / 4 = 2 -> 9, 8; pos 8: 9 / 4 = 2 -> 8, 9.
  {
    ref::BuilderInputs in = prefill_only(2, 4, 4, 3, 9);
    in.prefill_topk = mat(3, 4, {0, 1, 2, 3, 1, 0, 2, 3, 0, 1, 3, 2});
    in.swa = ref::PagedCache{mat(1, 1, {1}), 16};
    in.compressed = ref::PagedCache{mat(1, 2, {4, 6}), 2};
    add("topk_len steps where p + 1 reaches a multiple of the ratio", in,
        out(rows({{21, 22, 8, -1, -1, -1}, {22, 23, 9, 8, -1, -1}, {23, 24, 8, 9, -1, -1}}), vec({3, 4, 4})));
  }
  // Kp = 2 < topk_len = min(20 / 4, 4) = 4 at pos 19: the two picks 3 -> 6 * 2 + 1 = 13,
  // 1 -> 4 * 2 + 1 = 9, then -1; len W + topk_len = 6 counts the -1 entries. SWA block size
  // 16, table [1, 2]: i = 18, 19 -> 2 * 16 + {2, 3}.
  {
    ref::BuilderInputs in = prefill_only(2, 4, 4, 1, 20);
    in.prefill_topk = mat(1, 2, {3, 1});
    in.swa = ref::PagedCache{mat(1, 2, {1, 2}), 16};
    in.compressed = ref::PagedCache{mat(1, 2, {4, 6}), 2};
    add("fewer picks than top-k still count topk_len", in, out(mat(1, 6, {34, 35, 13, 9, -1, -1}), vec({6})));
  }
  // C128A, positions 254 and 255: (p + 1) / 128 = 1, then 2. W = 2, topk 4. SWA block size
  // 128, table [5, 9]: i = 253..255 -> 9 * 128 + i - 128. Compressed block size 2, table
  // [4, 7]: 0 -> 8, 1 -> 9.
  {
    ref::BuilderInputs in = prefill_only(2, 128, 4, 2, 256);
    in.prefill_topk = mat(2, 4, {0, 1, -1, -1, 0, 1, -1, -1});
    in.swa = ref::PagedCache{mat(1, 2, {5, 9}), 128};
    in.compressed = ref::PagedCache{mat(1, 2, {4, 7}), 2};
    add("C128A prefill after a long context", in,
        out(rows({{1277, 1278, 8, -1, -1, -1}, {1278, 1279, 8, 9, -1, -1}}), vec({3, 4})));
  }

  const ref::IndexMatrix all_decode = rows({{1, 2, 10, 11, -1, -1}, {3, -1, 20, -1, 7, -1}});
  {
    ref::BuilderInputs in = all_decode_global();
    in.decode_compressed_lens = vec({2, 1});
    add("all decode, global form with lens", in, out(all_decode, vec({4, 3})));  // W + lens
  }
  add("all decode, global form without lens", all_decode_global(), out(all_decode, vec({5, 5})));  // W + Kd
  // Kd = 3 > topk 2: P = 4, every decode length Kd.
  {
    ref::BuilderInputs in = tiny_c128a();
    in.decode_compressed_lens.reset();
    in.decode_compressed = mat(1, 3, {123456, -3, 7});
    add("global decode without lens, Kd above top-k", in,
        out(rows({{5, 6, -1, -1, 123456, -3, 7, -1}, {133, 134, 135, 136, -1, -1, -1, -1},
                  {134, 135, 136, 137, -1, -1, -1, -1}}),
            vec({7, 4, 4})));
  }

  const ref::IndexMatrix local_decode = rows({{4, 5, 8, 11, -1, -1}, {5, 6, 9, -1, -1, -1}, {-1, -1, 5, 28, -1, -1}});
  add("local decode with a padding token", local_decode_with_padding(), out(local_decode, vec({4, 3, 2})));
  {  // decode_valid absent = every token valid: t2 counts its 2 picks.
    ref::BuilderInputs in = local_decode_with_padding();
    in.decode_valid.reset();
    add("local decode without decode_valid", in, out(local_decode, vec({4, 3, 4})));
  }
  {  // Below -1 is "no entry" like -1: written -1, no error. t1: [-5, -1, -1] -> no pick.
    ref::BuilderInputs in = local_decode_with_padding();
    in.decode_compressed(1, 0) = -5;
    add("a local index below -1 is no entry", in,
        out(rows({{4, 5, 8, 11, -1, -1}, {5, 6, -1, -1, -1, -1}, {-1, -1, 5, 28, -1, -1}}), vec({4, 2, 2})));
  }
  {  // t1: [-5, 1, -1] -> -1, 9: one pick after the hole.
    ref::BuilderInputs in = local_decode_with_padding();
    in.decode_compressed.row(1) = mat(1, 3, {-5, 1, -1});
    add("a pick after a local index below -1", in,
        out(rows({{4, 5, 8, 11, -1, -1}, {5, 6, -1, 9, -1, -1}, {-1, -1, 5, 28, -1, -1}}), vec({4, 3, 2})));
  }

  {  // T = 0: empty outputs of width W + P = 4 + round_up(5, 4) = 12.
    ref::BuilderInputs in = prefill_only(4, 4, 5, 0, 0);
    in.query_start_loc = vec({0});
    in.seq_lens = ref::IndexVector(0);
    in.prefill_topk = ref::IndexMatrix(0, 5);
    in.swa = ref::PagedCache{ref::IndexMatrix(0, 0), 64};
    add("empty step", in, out(ref::IndexMatrix(0, 12), ref::IndexVector(0)));
  }
  {  // A decode request, an empty one, a prefill token at pos 0: window [1 * 16 + 0, -1].
    ref::BuilderInputs in;
    in.window = 2;
    in.ratio = 1;
    in.decode_swa_indices = mat(1, 2, {3, -1});
    in.prefill_topk = ref::IndexMatrix(1, 0);
    in.query_start_loc = vec({0, 1, 1, 2});
    in.seq_lens = vec({1, 0, 1});
    in.token_to_req = vec({0, 2});
    in.swa = ref::PagedCache{mat(3, 1, {0, 0, 1}), 16};
    add("an empty request in the middle", in, out(rows({{3, -1}, {16, -1}}), vec({2, 2})));
  }

  // ---- SPEC §4 content errors on the tiny C4A batch: -1 and counted, the rest unchanged ----
  const ref::IndexMatrix t2_block_1_lost = rows(
      {{5, 6, -1, -1, 2, -1, -1, -1}, kTinyC4aRow1, {134, 135, 136, 137, 5, -1, -1, -1}});
  // t2's local 4: block 2 >= NBc = 2.
  add("prefill compressed block past the table's width",
      tiny_c4a_with([](auto& in) { in.prefill_topk = mat(2, 2, {0, 1, 1, 4}); }),
      out(t2_block_1_lost, vec({5, 6, 6}), 1));
  // Request 1's compressed block 1 is -1: t2's local 2.
  add("compressed negative table entry",
      tiny_c4a_with([](auto& in) { in.compressed->block_table = mat(2, 2, {0, 1, 2, -1}); }),
      out(t2_block_1_lost, vec({5, 6, 6}), 1));
  // t0's local 6: block 3 >= 2; still a pick (v >= 0), len W + 1.
  add("decode local block past the table's width",
      tiny_c4a_with([](auto& in) { in.decode_compressed = mat(1, 2, {6, -1}); }),
      out(rows({{5, 6, -1, -1, -1, -1, -1, -1}, kTinyC4aRow1, {134, 135, 136, 137, 5, 6, -1, -1}}), vec({5, 6, 6}),
          1));
  // Request 1's SWA block 0 is -1: all 8 window lookups of t1 (5..8) and t2 (6..9).
  add("prefill SWA negative table entry",
      tiny_c4a_with([](auto& in) { in.swa.block_table = mat(2, 2, {0, 1, -1, 3}); }),
      out(rows({{5, 6, -1, -1, 2, -1, -1, -1}, {-1, -1, -1, -1, 4, 5, -1, -1}, {-1, -1, -1, -1, 5, 6, -1, -1}}),
          vec({5, 6, 6}), 8));
  // 2^30 * block size 2 = 2^31 does not fit int32: t1's locals 0, 1 and t2's local 1.
  add("slot beyond int32",
      tiny_c4a_with([](auto& in) { in.compressed->block_table = mat(2, 2, {0, 1, 1 << 30, 3}); }),
      out(rows({{5, 6, -1, -1, 2, -1, -1, -1}, {133, 134, 135, 136, -1, -1, -1, -1},
                {134, 135, 136, 137, -1, 6, -1, -1}}),
          vec({5, 6, 6}), 3));
  // Decode SWA rows are copied, never looked up: odd values pass, no error.
  add("decode SWA indices are copied",
      tiny_c4a_with([](auto& in) { in.decode_swa_indices = mat(1, 4, {5, 999999, -7, -1}); }),
      out(rows({{5, 999999, -7, -1, 2, -1, -1, -1}, kTinyC4aRow1, {134, 135, 136, 137, 5, 6, -1, -1}}),
          vec({5, 6, 6})));
  {  // Global slots are never looked up (every table entry -1), nor picks past topk_len (0).
    ref::BuilderInputs in = tiny_c128a();
    in.decode_compressed = mat(1, 2, {123456, -3});
    in.compressed->block_table = mat(2, 2, {-1, -1, -1, -1});
    in.prefill_topk = mat(2, 2, {99, 99, 99, 99});
    add("global slots and picks past topk_len are not looked up", in,
        out(rows({{5, 6, -1, -1, 123456, -3, -1, -1}, {133, 134, 135, 136, -1, -1, -1, -1},
                  {134, 135, 136, 137, -1, -1, -1, -1}}),
            vec({6, 4, 4})));
  }
  // topk 1 (P still 4): topk_len = min(2, 1) = 1, the bad second picks are never read.
  add("picks past topk_len are not looked up",
      tiny_c4a_with([](auto& in) {
        in.topk = 1;
        in.prefill_topk = mat(2, 2, {0, 99, 1, 99});
      }),
      out(rows({{5, 6, -1, -1, 2, -1, -1, -1}, {133, 134, 135, 136, 4, -1, -1, -1},
                {134, 135, 136, 137, 5, -1, -1, -1}}),
          vec({5, 5, 5})));
  return cases;
}

}  // namespace dsv4::harness
