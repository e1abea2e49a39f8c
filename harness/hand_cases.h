// Builds worked out by hand from SPEC §3/§4, with their expected outputs: the reference is
// tested against them, and every optimized backend against them too. The base is the
// upstream cache test's tiny batch (vLLM test_flashinfer_sparse_indices_cache):
//   window W = 4, SWA block size 64, block tables [[0, 1], [2, 3]]
//   request 0: one decode token (t = 0), seq_len 2, SWA row [5, 6, -1, -1]
//   request 1: two prefill tokens (t = 1, 2), seq_len 10 -> positions 8 and 9
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "reference/mixed_sparse_indices.h"

namespace dsv4::harness {

// Tensor literals: vec({1, 2}); mat(rows, cols, {...}) filled row by row (std::logic_error
// when the count is not rows * cols).
ref::IndexVector vec(std::initializer_list<int32_t> values);
ref::IndexMatrix mat(Eigen::Index rows, Eigen::Index cols, std::initializer_list<int32_t> values);

// The tiny batch as one SWA-only layer (ratio 1, topk 0), one C128A layer (global decode slots
// [9, 10] with lens 2, prefill local indices [[0, 1], [1, 2]], compressed block size 2 over
// the same table, topk 2) and one C4A layer (decode local [2, -1], valid; prefill as C128A).
ref::BuilderInputs tiny_swa_only();
ref::BuilderInputs tiny_c128a();
ref::BuilderInputs tiny_c4a();

struct HandCase {
  std::string name;
  ref::BuilderInputs inputs;
  ref::BuilderOutput expected;  // worked out by hand; the arithmetic is in hand_cases.cpp
};
std::vector<HandCase> hand_cases();

}  // namespace dsv4::harness
