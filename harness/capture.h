// Capture and replay: one step (builder inputs + schedule + per-layer C4A indices) as a
// directory of NumPy .npy files plus a JSON manifest (manifest.json). The format is
// documented at the top of capture.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/resource_limits.h"
#include "harness/step_case.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

struct Capture {
  ref::Step step;  // the live step; its block tables may hold rows past R (persistent tables)
  ref::ModelSchedule schedule;
  std::vector<ref::C4aIndexerOutput> c4a_per_layer;  // one per layer; empty for non-C4A
  // Version 2 (SPEC §7). Each block table's row stride in its persistent buffer (0: its width
  // NB; the .npy holds the NB columns that are read), and the engine's persistent buffers the
  // step came from (capacity-shaped; the live step is their head).
  int32_t swa_table_row_stride = 0, c4a_table_row_stride = 0, c128a_table_row_stride = 0;
  std::optional<PersistentStep> persistent;
};

// The case a capture replays: the table row strides as its layout (dense otherwise).
StepCase step_case(Capture capture);
// The capture of a case: its table row strides kept, the rest of its layout and its notes left.
Capture to_capture(const StepCase& c);

// Writes `dir` (created if missing): format version 1 unless the capture uses a SPEC §7 field
// (then 2). Throws std::invalid_argument for a capture that could not be loaded back (indexer
// output on a non-C4A layer, wrong number of entries, persistent buffers whose head or sizes
// are not the live step, a row stride below its table's width) and std::runtime_error on I/O
// failure.
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
  int32_t version = 1;
  int32_t num_decode_tokens = 0, max_model_len = 0;
  int32_t swa_block_size = 0, c4a_block_size = 0, c128a_block_size = 0;
  // Version 2 (SPEC §7), per paged cache: span (absent: the block size), base offset, the
  // table's row stride (0: its width).
  struct Addressing {
    std::optional<int32_t> block_span;
    int32_t base_offset = 0;
    int32_t table_row_stride = 0;
  };
  Addressing swa, c4a, c128a;
  // Version 2: the files are the engine's persistent buffers; T and R of the step (D is
  // step.num_decode_tokens) and the capacities that are not a file's length.
  struct Engine {
    int32_t num_tokens = 0, num_requests = 0;
    int32_t decode_capacity = 0, prefill_capacity = 0, c128a_capacity = 0, output_row_padding = 0;
  };
  std::optional<Engine> engine;
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
// C4A files against D and T - D (D_cap and the prefill capacity with persistent buffers), the
// SPEC §7 sizes against the capacities, and the step's resource limits (the step graph's
// outputs at T_cap rows too). Every problem throws
// InputError naming the file, the field and, where there is one, the layer and the row; a
// capture that loads is one the builders accept.
Capture load_capture(const std::string& dir, const CaptureLimits& limits = {});

}  // namespace dsv4::harness
