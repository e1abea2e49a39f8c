// An engine's persistent step buffers for a StepGraph (SPEC §7), in one backend's memory, with
// their host contents: random decode steps drawn into them (changing R and T under the
// capacities, sentinel request ids in padded rows, garbage past every size), uploaded before a
// replay, and the reference's checked build of every layer from the same contents.
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "harness/backend_step.h"
#include "harness/mismatch.h"
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
  std::vector<ref::IndexMatrix> c4a_decode_local;            // per C4A layer: D_cap x top-k
};

class GraphStepBuffers {
 public:
  GraphStepBuffers(opt::Backend backend, const ref::ModelSchedule& schedule, const GraphCapacities& capacities);
  GraphStepBuffers(const GraphStepBuffers&) = delete;
  GraphStepBuffers& operator=(const GraphStepBuffers&) = delete;

  const opt::StepGraphSpec& spec() const { return spec_; }
  opt::Backend backend() const { return backend_; }
  PersistentStepHost& host() { return host_; }
  // Draws a random decode step into host(): the previous contents stay past the new sizes.
  // `requests` > 0 fixes R (one token each) and `context` > 0 every request's seq_len (the
  // benchmark's step); else both are random.
  void draw_decode_step(std::mt19937_64& rng, int32_t requests = 0, int32_t context = 0);
  // Copies host() into the backend buffers (synchronous; the stream must be idle).
  void upload();

  // Layer `layer`'s reference inputs: the build StepGraph records for it, from host().
  ref::BuilderInputs reference_inputs(int32_t layer) const;
  opt::MetadataStatus status(opt::LayerKind kind) const;  // downloaded

 private:
  opt::Backend backend_;
  ref::ModelSchedule schedule_;
  GraphCapacities capacities_;
  int32_t c128a_width_ = 0;  // P_cap of C128A: max_compressed of max_context
  PersistentStepHost host_;
  std::deque<opt::BackendBuffer> buffers_;  // emplace_back keeps pointers to the others
  opt::StepGraphSpec spec_;
  std::vector<opt::BackendBuffer*> c4a_decode_buffers_;
  opt::BackendBuffer *sizes_ = nullptr, *statuses_ = nullptr, *query_start_loc_ = nullptr, *seq_lens_ = nullptr,
                     *token_to_req_ = nullptr, *decode_valid_ = nullptr, *swa_table_ = nullptr, *c4a_table_ = nullptr,
                     *c128a_table_ = nullptr, *decode_swa_ = nullptr, *c128a_global_ = nullptr, *c128a_lens_ = nullptr;
  opt::BackendBuffer* buffer(size_t bytes);
};

// Replays `graph` over what `buffers` holds and compares every layer's output, the status word
// of each kind and the content errors with the reference's checked builds. Empty: all equal.
std::vector<Mismatch> replay_and_compare(opt::StepGraph& graph, GraphStepBuffers& buffers,
                                         const ref::ModelSchedule& schedule);

}  // namespace dsv4::harness
