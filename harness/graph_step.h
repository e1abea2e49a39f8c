// An engine's persistent step buffers for a StepGraph (SPEC §7), in one backend's memory, with
// their host contents: random decode steps drawn into them (changing R and T under the
// capacities, sentinel request ids in padded rows, garbage past every size), or a step case's
// persistent buffers (the differential's graph path), uploaded before a replay, and the
// reference's checked build of every layer from the same contents.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "harness/backend_step.h"
#include "harness/mismatch.h"
#include "harness/step_case.h"
#include "optimized/step_graph.h"
#include "reference/metadata_checks.h"
#include "reference/model_schedule.h"

namespace dsv4::harness {

struct GraphCapacities {
  int32_t tokens = 64;         // T_cap (decode steps: D_cap too)
  int32_t requests = 64;       // R_cap
  int32_t table_rows = 72;     // rows of the persistent block tables (>= R_cap)
  int32_t max_context = 8192;  // longest context a request may reach; sizes the tables
};

// The host contents of every persistent buffer, capacity-shaped.
struct PersistentStepHost {
  ref::RunTimeSizes sizes;
  ref::IndexVector query_start_loc, seq_lens, token_to_req;  // R_cap + 1, R_cap, T_cap
  std::vector<uint8_t> decode_valid;                         // D_cap
  ref::PagedCache swa, c4a, c128a;                           // table_rows x NB
  ref::IndexMatrix decode_swa_indices;                       // D_cap x W
  ref::IndexMatrix c128a_decode_global;                      // D_cap x P_cap
  ref::IndexVector c128a_decode_lens;                        // D_cap
  ref::IndexMatrix c128a_prefill_local;                      // prefill rows x P_cap
  std::vector<ref::IndexMatrix> c4a_decode_local;            // per C4A layer: D_cap x K
  std::vector<ref::IndexMatrix> c4a_prefill_topk;            // per C4A layer: prefill rows x K
  std::vector<int32_t> c4a_topk;                             // per C4A layer
};

// A step case's StepGraph contents (SPEC §7): its persistent buffers (case.persistent, which
// must be present), its block tables, and the SPEC §6 metadata of its live step padded to the
// capacities (-1 past E in live rows, stale values in the rows past D and T - D).
PersistentStepHost graph_contents(const StepCase& c);

class GraphStepBuffers {
 public:
  // Decode-step buffers of `capacities`, stale contents until draw_decode_step.
  // `mode`: the outputs' form (seed: combined; split: the SWA segment and the compressed
  // segments), spec().mode.
  GraphStepBuffers(opt::Backend backend, const ref::ModelSchedule& schedule, const GraphCapacities& capacities,
                   opt::SharingMode mode = opt::SharingMode::kSeed);
  // The buffers of a step case (graph_contents), staged in its layout: strided and misaligned
  // matrices and tables, inputs it drops left out, each C4A layer's top-k; caller-owned outputs
  // c.persistent->output_row_padding wider than their rows, filled with 0x5a5a5a5a.
  GraphStepBuffers(opt::Backend backend, const StepCase& c, opt::SharingMode mode = opt::SharingMode::kSeed);
  GraphStepBuffers(const GraphStepBuffers&) = delete;
  GraphStepBuffers& operator=(const GraphStepBuffers&) = delete;

  const opt::StepGraphSpec& spec() const { return spec_; }
  opt::Backend backend() const { return backend_; }
  PersistentStepHost& host() { return host_; }
  // Draws a random decode step into host(): the previous contents stay past the new sizes.
  // `requests` > 0 fixes R (one token each) and `context` > 0 every request's seq_len (the
  // benchmark's step); else both are random. Buffers of GraphCapacities only.
  void draw_decode_step(std::mt19937_64& rng, int32_t requests = 0, int32_t context = 0);
  // Copies host() into the backend buffers (synchronous; the stream must be idle).
  void upload();

  // Layer `layer`'s reference inputs: the build StepGraph records for it, from host().
  ref::BuilderInputs reference_inputs(int32_t layer) const;
  opt::MetadataStatus status(opt::LayerKind kind) const;  // downloaded

 private:
  // A buffer and where in it the host contents go.
  struct Placed {
    opt::BackendBuffer* buffer = nullptr;
    MatrixLayout layout;
  };
  opt::Backend backend_;
  opt::SharingMode mode_;
  ref::ModelSchedule schedule_;
  StepLayout layout_;
  std::optional<GraphCapacities> capacities_;  // the decode-step buffers' (draw_decode_step)
  int32_t output_row_padding_ = 4;
  PersistentStepHost host_;
  std::vector<int32_t> c4a_layers_;  // the layer of each C4A entry
  std::deque<opt::BackendBuffer> buffers_;  // emplace_back keeps pointers to the others
  opt::StepGraphSpec spec_;
  std::vector<Placed> c4a_decode_, c4a_prefill_;
  Placed swa_table_, c4a_table_, c128a_table_, decode_swa_, c128a_global_, c128a_prefill_;
  opt::BackendBuffer *sizes_ = nullptr, *statuses_ = nullptr, *query_start_loc_ = nullptr, *seq_lens_ = nullptr,
                     *token_to_req_ = nullptr, *decode_valid_ = nullptr, *c128a_lens_ = nullptr;
  opt::BackendBuffer* buffer(size_t bytes);
  void stage();  // allocates every buffer from host()'s shapes and the layout, fills spec_, uploads
};

// The graph path's name in mismatch reports: "graph replay", or "graph replay, split".
std::string graph_path_name(opt::SharingMode mode);

// Replays `graph` over what `buffers` holds and compares every layer's output (split mode: its
// compressed segment, the combined output cut at column W, and the one SWA segment all share,
// the reference's build of the segment), the status word
// of each kind and the content errors (split: the SWA segment's counted once) with the
// reference's checked builds. Empty: all equal.
// `valid_step`: the reference must also find the metadata valid and count no content error
// (else the step itself, a generated or captured one, is wrong).
std::vector<Mismatch> replay_and_compare(opt::StepGraph& graph, GraphStepBuffers& buffers,
                                         const ref::ModelSchedule& schedule, bool valid_step = false);

}  // namespace dsv4::harness
