#include "reference/sharing_modes.h"

#include <stdexcept>
#include <string>

namespace dsv4::ref {

SplitOutput split_output(const BuilderOutput& combined, int32_t window) {
  const Eigen::Index columns = combined.sparse_indices.cols();
  if (window < 0 || window > columns) {
    throw std::invalid_argument("split_output: window " + std::to_string(window) + " is outside the output's " +
                                std::to_string(columns) + " columns");
  }
  SplitOutput split;
  split.swa_indices = combined.sparse_indices.leftCols(window);
  split.compressed_indices = combined.sparse_indices.rightCols(columns - window);
  // A row of length 0 is one not built (a built row's is >= W): 0 in the segment too.
  split.compressed_lens = (combined.sparse_lens.array() == 0).select(0, combined.sparse_lens.array() - window);
  return split;
}

BuilderInputs window_segment_inputs(const BuilderInputs& in) {
  BuilderInputs w;
  w.window = in.window;
  w.ratio = 1;
  w.topk = 0;
  w.decode_swa_indices = in.decode_swa_indices;
  w.prefill_topk = IndexMatrix(in.token_to_req.size() - in.decode_swa_indices.rows(), 0);
  w.query_start_loc = in.query_start_loc;
  w.seq_lens = in.seq_lens;
  w.token_to_req = in.token_to_req;
  w.swa = in.swa;
  return w;
}

}  // namespace dsv4::ref
