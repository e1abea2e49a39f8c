// The differential check (DESIGN "harness"): for one step case and every layer, the
// reference's uncached run == the optimized path uncached (CacheOptions{enabled=false}) ==
// the optimized path through the per-step cache, element for element: sparse_indices,
// sparse_lens and content-error counts, on every backend present, with the inputs staged in
// the case's layout. Also checks the cached
// path's builder calls (SPEC §5), that hits return the first build's buffers, and that a
// StepIndexer refuses use after end_step. A case with persistent buffers (SPEC §7) also takes
// the graph path: the whole step recorded as one StepGraph over those buffers (capacities,
// run-time sizes, caller-owned outputs) and replayed, every layer, status word and the
// content errors equal to the reference's checked builds of the same buffers.
// With SPEC §8 modes chosen, each mode's paths (sharing_check.h) too.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/counting_builder.h"
#include "harness/mismatch.h"
#include "harness/step_case.h"
#include "optimized/builder.h"
#include "optimized/step_indexer.h"

namespace dsv4::harness {

using BuilderFactory =
    std::function<std::unique_ptr<opt::MixedSparseIndicesBuilder>(opt::Backend)>;

// A summary row's name: the backend's ("host"), followed by the mode's unless it is the seed.
std::string totals_name(opt::Backend backend, opt::SharingMode mode);

// Host always; CUDA when opt::cuda_device_present().
std::vector<opt::Backend> backends_present();
// The real builders: make_host_builder() / make_cuda_builder() on a stream of the builder's own
// (a StepGraph cannot be recorded on the legacy default stream).
std::unique_ptr<opt::MixedSparseIndicesBuilder> make_builder(opt::Backend backend);

enum class ContentErrorPolicy {
  kMustBeZero,  // a valid step: any content error (reference or optimized) is a failure
  kMustMatch,   // a corrupted step: counts must agree, layer by layer
};

struct DifferentialOptions {
  std::vector<opt::Backend> backends;  // empty: backends_present()
  BuilderFactory make_builder;         // null: the real builders (tests inject faulty ones)
  ContentErrorPolicy content_errors = ContentErrorPolicy::kMustBeZero;
  bool verify_on_hit = false;          // the cached path with CacheOptions::verify_on_hit
  // SPEC §8: the sharing modes checked (seed: the uncached and cached paths above; split and
  // tail-only: their own path, sharing_check.h), and whether each mode's path is also run with
  // its cacheable builds in one launch.
  std::vector<opt::SharingMode> modes{opt::SharingMode::kSeed};
  bool one_launch = false;
  size_t max_reported = 8;             // mismatches described in full per summary
};

struct BackendTotals {
  std::string backend;  // "host", "cuda"; a SPEC §8 mode's row: "host split", "cuda tail"
  opt::SharingMode mode = opt::SharingMode::kSeed;  // the row's mode
  int64_t steps = 0, layers = 0;
  // builder calls counted by CountingBuilder; a mode's row: one per layer, and the builds of
  // the mode's path
  int64_t calls_uncached = 0, calls_cached = 0;
  int64_t graph_steps = 0, calls_graph = 0;  // steps recorded as a StepGraph, their builds
  int64_t mismatches = 0;
  int64_t content_errors = 0;  // counted by the uncached path (a mode's row: by the mode's path)
};

// How many steps used SPEC §7 engine layouts.
struct EngineLayoutCounts {
  int64_t graph = 0;              // persistent buffers: the graph path ran
  int64_t spans_offsets = 0;      // a paged cache with a block span or a base offset
  int64_t persistent_tables = 0;  // a block table with rows past R or a row stride past its width
};

struct DifferentialSummary {
  int64_t steps = 0, layers = 0;
  EngineLayoutCounts engine;
  int64_t reference_content_errors = 0;
  int64_t reference_mismatches = 0;  // the reference threw, or erred on a valid step
  int32_t reference_first_error_layer = -1;  // the first layer with content errors (first step)
  std::vector<BackendTotals> backends;
  std::vector<Mismatch> reported;    // the first few, in full
  std::vector<std::string> failing_steps;  // describe() + replay line of each failing step
  size_t max_reported = 8;

  int64_t mismatches() const;
  bool ok() const { return mismatches() == 0; }
  void add(const DifferentialSummary& other);
  // Every reported mismatch in full, each failing step and how to replay it.
  std::string report() const;
};

// Keeps one counting builder per backend across steps, as an engine keeps its builder
// (so workspace recycling between steps is exercised too).
class DifferentialChecker {
 public:
  explicit DifferentialChecker(DifferentialOptions options = {});
  // `replay` says how to reproduce this case (a command line, or RapidCheck's
  // RC_PARAMS="reproduce=..."); it is printed with every failure.
  DifferentialSummary check(const StepCase& c, const std::string& replay = "");
  // The same with another content-error policy than the options' (valid vs corrupted steps).
  DifferentialSummary check(const StepCase& c, ContentErrorPolicy policy, const std::string& replay);
  const std::vector<opt::Backend>& backends() const { return backends_; }

 private:
  DifferentialOptions options_;
  std::vector<opt::Backend> backends_;
  std::vector<opt::SharingMode> modes_;
  std::vector<std::unique_ptr<opt::MixedSparseIndicesBuilder>> builders_;
  std::vector<std::unique_ptr<CountingBuilder>> counting_;  // one around each builder
};

// One-shot form with fresh builders.
DifferentialSummary differential_check(const StepCase& c, const DifferentialOptions& options = {},
                                       const std::string& replay = "");

}  // namespace dsv4::harness
