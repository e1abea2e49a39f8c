// One verification case: a step, the model schedule it runs through, every layer's C4A
// indexer output and the layout its inputs are staged in. What the generators produce, the
// differential check consumes and a capture (capture.h) holds (in the dense layout).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/input_layout.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

struct StepCase {
  ref::Step step;
  ref::ModelSchedule schedule;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // one per layer; empty for non-C4A
  std::vector<std::string> notes;  // what a generator did on purpose (corruptions)
  StepLayout layout;
};

// The reference's output of every layer, built as the case's layout stages the inputs.
std::vector<ref::BuilderOutput> reference_outputs(const StepCase& c);

// One line: schedule, R/T/D, block sizes, window, top-k, layout.
std::string describe(const StepCase& c);

// RapidCheck prints counterexamples through this (found by ADL): the summary, every
// request, and the small tensors in full.
void showValue(const StepCase& c, std::ostream& os);

}  // namespace dsv4::harness
