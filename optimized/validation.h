// Structural validation (SPEC §4), run on the host once per step, never per layer.
#pragma once
#include "optimized/build_request.h"

namespace dsv4::opt {

// Whole-step checks, O(T + R): query_start_loc, token_to_req, seq_lens vs query lengths and
// vs the block tables' capacity, D at a request boundary. `request` is any build request of
// the step (its scalar sizes and table shapes are read; its pointers are not dereferenced).
// Throws std::invalid_argument naming field, row and value.
void validate_step_structure(const BuildRequest& request, const StepStructureHost& host);

// Per-build O(1) checks: window/ratio/topk/block sizes >= their minimum and every view's
// shape consistent with R, T, D. Throws std::invalid_argument naming the field.
void validate_request_shape(const BuildRequest& request);

}  // namespace dsv4::opt
