#include "harness/differential.h"

#include <new>
#include <sstream>
#include <stdexcept>

#if defined(DSV4_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "harness/backend_step.h"
#include "harness/compare_build.h"
#include "harness/graph_step.h"
#include "harness/sharing_check.h"
#include "harness/sharing_plan.h"
#include "optimized/cuda_builder.h"
#include "optimized/host_builder.h"
#include "optimized/step_graph.h"
#include "optimized/step_indexer.h"

namespace dsv4::harness {
namespace {

enum class Path { kUncached, kCached };  // the step's eager paths (the graph path: run_graph_path)
const char* path_name(Path p) {
  return p == Path::kUncached ? "uncached" : "cached";
}

const char* kind_name(int32_t ratio) {
  return ref::layer_kind_name(ref::layer_kind_from_ratio(ratio));
}

// Collects mismatches into a summary: counts all, keeps the first few in full.
class Recorder {
 public:
  Recorder(DifferentialSummary& summary, BackendTotals* totals) : summary_(summary), totals_(totals) {}
  void operator()(const Mismatch& m) {
    if (totals_) {
      ++totals_->mismatches;
    } else {
      ++summary_.reference_mismatches;
    }
    if (summary_.reported.size() < summary_.max_reported) summary_.reported.push_back(m);
  }

 private:
  DifferentialSummary& summary_;
  BackendTotals* totals_;
};

// Names the step's request and position of a mismatch's token (none for a padded row).
void name_token(Mismatch& m, const ref::Step& step) {
  if (m.token < 0 || m.token >= step.num_tokens()) return;
  m.request = step.token_to_req(m.token);
  m.position = ref::token_position(step, m.token);
}

// One path (uncached or cached) of one backend through a fresh StepIndexer.
void run_path(Path path, const StepCase& c, const std::vector<ref::BuilderOutput>& want,
              const BackendStep& staged, CountingBuilder& builder, bool verify_on_hit, BackendTotals& totals,
              Recorder& record) {
  const int32_t layers = c.schedule.num_layers();
  opt::CacheOptions options;
  options.enabled = path == Path::kCached;
  options.verify_on_hit = options.enabled && verify_on_hit;
  opt::StepIndexer indexer(builder, staged.inputs(), options);

  Mismatch base;
  base.backend = opt::backend_name(staged.backend());
  base.path = path_name(path);
  base.window = c.schedule.window;

  const int64_t calls_before = builder.build_calls();
  std::vector<opt::BuiltIndices> built(static_cast<size_t>(layers));
  std::vector<int64_t> errors(static_cast<size_t>(layers), 0);
  std::vector<bool> built_here(static_cast<size_t>(layers), false);
  int64_t errors_so_far = 0;
  for (int32_t l = 0; l < layers; ++l) {
    const int64_t before = indexer.cache().builder_calls();  // verify_on_hit rebuilds not counted
    built[static_cast<size_t>(l)] =
        indexer.layer_indices(c.schedule.compress_ratios[static_cast<size_t>(l)], staged.c4a(l));
    built_here[static_cast<size_t>(l)] = indexer.cache().builder_calls() > before;
    const int64_t total = indexer.content_errors();
    errors[static_cast<size_t>(l)] = total - errors_so_far;
    errors_so_far = total;
  }
  // Counted around the builder, not by the cache, so a wrong key cannot hide; verify_on_hit
  // rebuilds each hit once more, so the builder then sees one call per layer and the cache's
  // own count of real builds is checked too.
  const int64_t calls = builder.build_calls() - calls_before;
  const SharingPlan plan = sharing_plan(c);  // index sources (SPEC §8) cache C4A layers too
  const int64_t expected_builds = path == Path::kUncached ? layers : plan.groups;
  const int64_t builds = options.verify_on_hit ? indexer.cache().builder_calls() : calls;
  (path == Path::kUncached ? totals.calls_uncached : totals.calls_cached) += builds;
  if (path == Path::kUncached) totals.content_errors += errors_so_far;
  for (const auto& [counted, expected] : {std::pair{calls, options.verify_on_hit ? layers : expected_builds},
                                          std::pair{builds, expected_builds}}) {
    if (counted == expected) continue;
    Mismatch m = base;
    m.what = "builder calls";
    m.expected = expected;
    m.actual = counted;
    record(m);
    break;
  }

  // Read back only now: a later layer's build must not have overwritten an earlier output.
  std::vector<const opt::BuiltIndices*> first_of_group(static_cast<size_t>(plan.groups), nullptr);
  for (int32_t l = 0; l < layers; ++l) {
    const auto li = static_cast<size_t>(l);
    const int32_t ratio = c.schedule.compress_ratios[li];
    Mismatch lb = base;
    lb.layer = l;
    lb.kind = kind_name(ratio);
    // A hit counts no errors of its own: it has those its first build counted, or more if wrong.
    const bool hit = path == Path::kCached && !built_here[li];
    const int64_t got_errors = errors[li] + (hit ? want[li].content_errors : 0);
    for (Mismatch m : compare_build(want[li], download(staged.backend(), built[li]), got_errors,
                                    c.step.num_decode_tokens, lb)) {
      name_token(m, c.step);
      record(m);
    }

    if (path == Path::kCached) {
      const opt::BuiltIndices*& first = first_of_group[static_cast<size_t>(plan.group[li])];
      if (first == nullptr) {
        first = &built[li];
      } else if (first->sparse_indices != built[li].sparse_indices ||
                 first->sparse_lens != built[li].sparse_lens) {
        Mismatch m = lb;
        m.what = "buffer identity";
        m.detail = "a cache hit returned other buffers than the first build of its key";
        record(m);
      }
    }
  }

  indexer.end_step();
  if (layers > 0) {  // the step is over: no stale hit, no build
    bool threw = false;
    try {
      indexer.layer_indices(c.schedule.compress_ratios[0], staged.c4a(0));
    } catch (const std::logic_error&) {
      threw = true;
    }
    if (!threw) {
      Mismatch m = base;
      m.what = "use after end_step";
      m.detail = "StepIndexer::layer_indices after end_step() did not throw std::logic_error";
      record(m);
    }
  }
}

// The graph path (SPEC §7): the step recorded once as a StepGraph over its persistent buffers
// (one build per cache key and per C4A layer, like the cached path; split mode, SPEC §8: the
// SWA segment too, and every layer's compressed segment) and replayed.
void run_graph_path(const StepCase& c, opt::Backend backend, CountingBuilder& builder, ContentErrorPolicy policy,
                    opt::SharingMode mode, BackendTotals& totals, Recorder& record) {
  GraphStepBuffers buffers(backend, c, mode);
  (void)builder.take_content_errors();
  const int64_t calls_before = builder.build_calls();
  opt::StepGraph graph(builder, buffers.spec());
  const int64_t calls = builder.build_calls() - calls_before;
  ++totals.graph_steps;
  totals.calls_graph += calls;
  const bool segment = mode == opt::SharingMode::kSplit && c.schedule.num_layers() > 0;
  const int64_t expected = expected_builder_calls(c.schedule, true) + (segment ? 1 : 0);
  if (calls != expected || graph.builds() != expected) {
    Mismatch m;
    m.backend = opt::backend_name(backend);
    m.path = graph_path_name(mode);
    m.what = "builder calls";
    m.expected = expected;
    m.actual = calls;
    m.detail = "recorded " + std::to_string(graph.builds()) + " builds";
    record(m);
  }
  for (Mismatch m : replay_and_compare(graph, buffers, c.schedule, policy == ContentErrorPolicy::kMustBeZero)) {
    name_token(m, c.step);
    record(m);
  }
}

bool has_span_or_offset(const ref::Step& s) {
  for (const ref::PagedCache* cache : {&s.swa, &s.c4a, &s.c128a})
    if (cache->block_span || cache->base_offset != 0) return true;
  return false;
}

bool has_persistent_table(const StepCase& c) {
  const StepLayout& l = c.layout;
  for (const ref::PagedCache* cache : {&c.step.swa, &c.step.c4a, &c.step.c128a})
    if (cache->block_table.rows() > c.step.num_requests()) return true;
  for (const TableLayout* t : {&l.swa_table, &l.c4a_table, &l.c128a_table})
    if (t->row_padding > 0 || t->extra_rows > 0) return true;
  return false;
}

#if defined(DSV4_WITH_CUDA)
// The CUDA builder on a non-blocking stream of its own, which it destroys: a StepGraph cannot be
// recorded on the legacy default stream.
class OwnStreamCudaBuilder final : public opt::MixedSparseIndicesBuilder {
 public:
  OwnStreamCudaBuilder() {
    const cudaError_t created = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (created != cudaSuccess) {
      throw std::runtime_error(std::string("cudaStreamCreateWithFlags: ") + cudaGetErrorString(created));
    }
    try {
      inner_ = opt::make_cuda_builder(stream_);
    } catch (...) {
      (void)cudaStreamDestroy(stream_);
      throw;
    }
  }
  ~OwnStreamCudaBuilder() override {
    inner_.reset();
    (void)cudaStreamDestroy(stream_);
  }
  OwnStreamCudaBuilder(const OwnStreamCudaBuilder&) = delete;
  OwnStreamCudaBuilder& operator=(const OwnStreamCudaBuilder&) = delete;

  opt::Backend backend() const override { return inner_->backend(); }
  opt::BuiltIndices build(const opt::BuildRequest& request) override { return inner_->build(request); }
  void build_together(const opt::BuildRequest* requests, int count, opt::BuiltIndices* out) override {
    inner_->build_together(requests, count, out);  // one launch, as the CUDA builder does it
  }
  int64_t take_content_errors() override { return inner_->take_content_errors(); }
  void release_outputs() override { inner_->release_outputs(); }
  void begin_recording(int32_t chains) override { inner_->begin_recording(chains); }
  std::unique_ptr<opt::RecordedBuilds> end_recording() override { return inner_->end_recording(); }

 private:
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<opt::MixedSparseIndicesBuilder> inner_;
};
#endif

}  // namespace

std::string totals_name(opt::Backend backend, opt::SharingMode mode) {
  return std::string(opt::backend_name(backend)) +
         (mode == opt::SharingMode::kSeed ? "" : std::string(" ") + opt::sharing_mode_name(mode));
}

std::vector<opt::Backend> backends_present() {
  std::vector<opt::Backend> b{opt::Backend::kHost};
  if (opt::cuda_device_present()) b.push_back(opt::Backend::kCuda);
  return b;
}

std::unique_ptr<opt::MixedSparseIndicesBuilder> make_builder(opt::Backend backend) {
  if (backend == opt::Backend::kHost) return opt::make_host_builder();
#if defined(DSV4_WITH_CUDA)
  return std::make_unique<OwnStreamCudaBuilder>();
#else
  return opt::make_cuda_builder();  // throws: no CUDA in this build
#endif
}

int64_t DifferentialSummary::mismatches() const {
  int64_t n = reference_mismatches;
  for (const BackendTotals& b : backends) n += b.mismatches;
  return n;
}

void DifferentialSummary::add(const DifferentialSummary& o) {
  steps += o.steps;
  layers += o.layers;
  engine.graph += o.engine.graph;
  engine.spans_offsets += o.engine.spans_offsets;
  engine.persistent_tables += o.engine.persistent_tables;
  reference_content_errors += o.reference_content_errors;
  reference_mismatches += o.reference_mismatches;
  if (reference_first_error_layer < 0) reference_first_error_layer = o.reference_first_error_layer;
  for (const BackendTotals& ob : o.backends) {
    BackendTotals* mine = nullptr;
    for (BackendTotals& b : backends)
      if (b.backend == ob.backend) mine = &b;
    if (!mine) {
      backends.push_back(BackendTotals{ob.backend, ob.mode});
      mine = &backends.back();
    }
    mine->steps += ob.steps;
    mine->layers += ob.layers;
    mine->calls_uncached += ob.calls_uncached;
    mine->calls_cached += ob.calls_cached;
    mine->graph_steps += ob.graph_steps;
    mine->calls_graph += ob.calls_graph;
    mine->mismatches += ob.mismatches;
    mine->content_errors += ob.content_errors;
  }
  for (const Mismatch& m : o.reported)
    if (reported.size() < max_reported) reported.push_back(m);
  for (const std::string& s : o.failing_steps)
    if (failing_steps.size() < max_reported) failing_steps.push_back(s);
}

std::string DifferentialSummary::report() const {
  std::ostringstream os;
  os << mismatches() << " mismatch(es)";
  if (static_cast<int64_t>(reported.size()) < mismatches()) os << ", the first " << reported.size() << ":";
  os << "\n";
  for (const Mismatch& m : reported) os << "  " << format_mismatch(m) << "\n";
  for (const std::string& s : failing_steps) os << "failing step: " << s << "\n";
  return os.str();
}

DifferentialChecker::DifferentialChecker(DifferentialOptions options)
    : options_(std::move(options)) {
  backends_ = options_.backends.empty() ? backends_present() : options_.backends;
  modes_ = options_.modes.empty() ? std::vector<opt::SharingMode>{opt::SharingMode::kSeed} : options_.modes;
  const BuilderFactory factory = options_.make_builder ? options_.make_builder : BuilderFactory(make_builder);
  for (opt::Backend b : backends_) {
    builders_.push_back(factory(b));
    counting_.push_back(std::make_unique<CountingBuilder>(*builders_.back()));
  }
}

DifferentialSummary DifferentialChecker::check(const StepCase& c, const std::string& replay) {
  return check(c, options_.content_errors, replay);
}

DifferentialSummary DifferentialChecker::check(const StepCase& c, ContentErrorPolicy policy,
                                               const std::string& replay) {
  DifferentialSummary summary;
  summary.max_reported = options_.max_reported;
  summary.steps = 1;
  summary.layers = c.schedule.num_layers();
  summary.engine.graph = c.persistent ? 1 : 0;
  summary.engine.spans_offsets = has_span_or_offset(c.step) ? 1 : 0;
  summary.engine.persistent_tables = has_persistent_table(c) ? 1 : 0;
  for (opt::Backend b : backends_)
    for (opt::SharingMode mode : modes_) summary.backends.push_back(BackendTotals{totals_name(b, mode), mode});

  Recorder reference_record(summary, nullptr);
  std::vector<ref::BuilderOutput> want;
  try {
    want = reference_outputs(c);
  } catch (const std::bad_alloc&) {
    throw;  // memory is short, not a mismatch: verify reports it (exit 3)
  } catch (const std::exception& e) {
    Mismatch m;
    m.backend = "reference";
    m.what = "exception";
    m.detail = e.what();
    reference_record(m);
  }
  if (summary.reference_mismatches == 0) {
    int32_t first_layer = -1;
    for (size_t l = 0; l < want.size(); ++l) {
      summary.reference_content_errors += want[l].content_errors;
      if (want[l].content_errors > 0 && first_layer < 0) first_layer = static_cast<int32_t>(l);
    }
    summary.reference_first_error_layer = first_layer;
    if (policy == ContentErrorPolicy::kMustBeZero && first_layer >= 0) {
      Mismatch m;
      m.backend = "reference";
      m.what = "content errors on a valid step";
      m.layer = first_layer;
      m.kind = kind_name(c.schedule.compress_ratios[static_cast<size_t>(first_layer)]);
      m.actual = summary.reference_content_errors;
      m.detail = "the reference counted " + std::to_string(want[static_cast<size_t>(first_layer)].content_errors) +
                 " in this layer (the first with any), " + std::to_string(summary.reference_content_errors) +
                 " in all layers; a valid step has none (for a generated step: a generator or reference bug)";
      reference_record(m);
    }
    const bool seed_only = modes_.size() == 1 && modes_[0] == opt::SharingMode::kSeed && !options_.one_launch;
    const int64_t window_errors = seed_only ? 0 : window_content_errors(c);
    for (size_t i = 0; i < backends_.size(); ++i) {
      std::string path;
      size_t row = i * modes_.size();  // summary.backends: per backend, a row per mode
      try {
        BackendStep staged(backends_[i], c.step, c.schedule, c.c4a_per_layer, c.layout);
        for (size_t mi = 0; mi < modes_.size(); ++mi) {
          const opt::SharingMode mode = modes_[mi];
          row = i * modes_.size() + mi;
          BackendTotals& totals = summary.backends[row];
          totals.steps = 1;
          totals.layers = summary.layers;
          Recorder record(summary, &totals);
          if (mode == opt::SharingMode::kSeed) {
            path = path_name(Path::kUncached);
            run_path(Path::kUncached, c, want, staged, *counting_[i], options_.verify_on_hit, totals, record);
            path = path_name(Path::kCached);
            run_path(Path::kCached, c, want, staged, *counting_[i], options_.verify_on_hit, totals, record);
          }
          // SPEC §7 x §8: the step's graph in the seed and the split forms (tail-only has none).
          if (c.persistent && mode != opt::SharingMode::kTailOnly) {
            path = graph_path_name(mode);
            run_graph_path(c, backends_[i], *counting_[i], policy, mode, totals, record);
          }
          for (const bool one_launch : {false, true}) {
            if (mode == opt::SharingMode::kSeed && !one_launch) continue;  // the cached path above
            if (one_launch && !options_.one_launch) continue;
            path = std::string(opt::sharing_mode_name(mode)) + (one_launch ? ", one launch" : "");
            const SharingPathTotals t = check_sharing_path(mode, one_launch, c, want, window_errors, staged,
                                                           *counting_[i], [&record](Mismatch m) { record(m); });
            if (mode != opt::SharingMode::kSeed && !one_launch) {
              totals.calls_uncached += summary.layers;
              totals.calls_cached += t.builds;
              totals.content_errors += t.content_errors;
            }
          }
        }
      } catch (const std::bad_alloc&) {
        throw;  // as above
      } catch (const std::exception& e) {
        BackendTotals& totals = summary.backends.at(row);
        Recorder record(summary, &totals);
        Mismatch m;
        m.backend = totals.backend;
        m.path = path;
        m.what = "exception";
        m.detail = e.what();
        record(m);
      }
    }
  }
  if (!summary.ok()) {
    summary.failing_steps.push_back(describe(c) +
                                    (replay.empty() ? std::string() : "\n  replay: " + replay));
  }
  return summary;
}

DifferentialSummary differential_check(const StepCase& c, const DifferentialOptions& options,
                                       const std::string& replay) {
  DifferentialChecker checker(options);
  return checker.check(c, replay);
}

}  // namespace dsv4::harness
