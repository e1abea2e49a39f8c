// Capture and replay: one step (builder inputs + schedule + per-layer C4A indices) as a
// directory of NumPy .npy files plus a JSON manifest (manifest.json).
#pragma once
#include <string>
#include <vector>

#include "reference/model_schedule.h"

namespace dsv4::harness {

struct Capture {
  ref::Step step;
  ref::ModelSchedule schedule;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // one per layer; empty for non-C4A
};

// Writes `dir` (created if missing). Throws std::runtime_error on I/O failure.
void save_capture(const Capture& capture, const std::string& dir);
// Throws std::runtime_error naming the file and the field on any malformed input.
Capture load_capture(const std::string& dir);

}  // namespace dsv4::harness
