// Capture and replay: one step (builder inputs + schedule + per-layer C4A indices) as a
// directory of NumPy .npy files plus a JSON manifest (manifest.json). The format is
// documented at the top of capture.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/resource_limits.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

struct Capture {
  ref::Step step;
  ref::ModelSchedule schedule;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // one per layer; empty for non-C4A
};

// Writes `dir` (created if missing). Throws std::invalid_argument for a capture that could
// not be loaded back (indexer output on a non-C4A layer, wrong number of entries) and
// std::runtime_error on I/O failure.
void save_capture(const Capture& capture, const std::string& dir);

struct CaptureLimits {
  // --max-capture-bytes: the data of every .npy file together, checked against each file's
  // header before its body is read.
  uint64_t max_capture_bytes = uint64_t{1} << 30;
  ResourceLimits resources;  // the step's outputs, window, row widths, layers
};
constexpr uint64_t kMaxManifestBytes = uint64_t{16} << 20;

// manifest.json, parsed and checked on its own (no file is read): the format, every field's
// type and range, layer kinds, c4a_layers entries for exactly the C4A layers, file names.
struct Manifest {
  ref::ModelSchedule schedule;
  int32_t num_decode_tokens = 0, max_model_len = 0;
  int32_t swa_block_size = 0, c4a_block_size = 0, c128a_block_size = 0;
  // The seven step arrays' file names, keyed by field (query_start_loc, seq_lens, ...).
  std::vector<std::pair<std::string, std::string>> files;
  struct C4aLayer {
    int32_t layer = 0;
    std::string decode_local, prefill_topk;
    std::string field;  // "c4a_layers[i]"
  };
  std::vector<C4aLayer> c4a_layers;  // manifest order

  const std::string& file(const std::string& field) const;
};
// `label` names the manifest in messages (its path). Throws InputError.
Manifest parse_manifest(const std::string& text, const std::string& label, const CaptureLimits& limits = {});

// Loads and checks a capture: the manifest, every .npy file (header first, within
// limits.max_capture_bytes), the step's structure (SPEC §4, as the builders check it), the
// C4A files against D and T - D, and the step's resource limits. Every problem throws
// InputError naming the file, the field and, where there is one, the layer and the row; a
// capture that loads is one the builders accept.
Capture load_capture(const std::string& dir, const CaptureLimits& limits = {});

}  // namespace dsv4::harness
