// One verification case: a step, the model schedule it runs through, every layer's C4A
// indexer output and the layout its inputs are staged in; optionally the step as an engine's
// persistent buffers hold it (SPEC §7). What the generators produce, the differential check
// consumes and a capture (capture.h) holds (in the dense layout, block-table strides kept).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "harness/input_layout.h"
#include "reference/metadata_checks.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

// A step in an engine's persistent buffers (SPEC §7), as a StepGraph reads them: the per-token
// and per-request metadata and every C4A layer's indexer output at capacities past the live
// step's T, D, T - D and R, holding past them what an engine leaves there (sentinel request id
// -1 in padded token rows, stale values elsewhere), and the run-time sizes. The block tables are
// the step's own (persistent ones hold R_cap rows or more); the SPEC §6 metadata (decode SWA
// indices, C128A) is derived from the live step and padded alike when staged (graph_step.h).
struct PersistentStep {
  ref::RunTimeSizes sizes;               // what the engine writes for the step: T, D, R
  ref::IndexVector query_start_loc;      // R_cap + 1
  ref::IndexVector seq_lens;             // R_cap
  ref::IndexVector token_to_req;         // T_cap; -1 in the padded rows [T, T_cap)
  std::vector<uint8_t> decode_valid;     // D_cap, or empty: every decode token valid
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // per layer: D_cap and prefill_capacity rows
  int32_t decode_capacity = 0;           // D_cap <= T_cap: rows of the decode matrices
  int32_t prefill_capacity = 0;          // rows of the prefill matrices (>= T - D when valid)
  int32_t c128a_capacity = 0;            // P_cap >= E: C128A layers are recorded with topk = P_cap
  int32_t output_row_padding = 0;        // caller-owned output rows this much wider (a multiple of 4)

  int32_t token_capacity() const { return static_cast<int32_t>(token_to_req.size()); }     // T_cap
  int32_t request_capacity() const { return static_cast<int32_t>(seq_lens.size()); }       // R_cap
};

struct StepCase {
  ref::Step step;
  ref::ModelSchedule schedule;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // one per layer; empty for non-C4A
  std::vector<std::string> notes;  // what a generator did on purpose (corruptions)
  StepLayout layout;
  // Present: the differential also records the step as one StepGraph over these buffers and
  // replays it with the run-time sizes (SPEC §7).
  std::optional<PersistentStep> persistent;
};

// The reference's output of every layer, built as the case's layout stages the inputs.
std::vector<ref::BuilderOutput> reference_outputs(const StepCase& c);

// One line: schedule, R/T/D, block sizes (spans, offsets), window, top-k, layout, persistent
// buffers.
std::string describe(const StepCase& c);
std::string describe(const PersistentStep& p);

// RapidCheck prints counterexamples through this (found by ADL): the summary, every
// request, and the small tensors in full.
void showValue(const StepCase& c, std::ostream& os);

}  // namespace dsv4::harness
