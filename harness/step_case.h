// One verification case: a step, the model schedule it runs through and every layer's C4A
// indexer output. What the generators produce, the differential check consumes and a
// capture (capture.h) holds.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "reference/model_schedule.h"

namespace dsv4::harness {

struct StepCase {
  ref::Step step;
  ref::ModelSchedule schedule;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // one per layer; empty for non-C4A
  std::vector<std::string> notes;  // what a generator did on purpose (corruptions)
};

// One line: schedule, R/T/D, block sizes, window, top-k.
std::string describe(const StepCase& c);

// RapidCheck prints counterexamples through this (found by ADL): the summary, every
// request, and the small tensors in full.
void showValue(const StepCase& c, std::ostream& os);

}  // namespace dsv4::harness
