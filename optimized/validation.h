// Structural validation (SPEC §4), run on the host once per step, never per layer.
#pragma once
#include <string>

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

// The same checks without throwing: the message validate_* would throw, or "" when the request
// passes. For callers that must not let a C++ exception cross them (the Python binding raises
// its own exception from the message).
std::string step_structure_error(const BuildRequest& request, const StepStructureHost& host);
std::string request_shape_error(const BuildRequest& request);

}  // namespace dsv4::opt
