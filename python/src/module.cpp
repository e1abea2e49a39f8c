// dsv4_indices._core: the nanobind module over optimized/ (build, StepIndexer) and reference/
// (reference_build, reference_step_metadata, the model schedules). Bindings only: argument
// views, output lifetimes and error translation; every rule of SPEC.md lives in the libraries.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arrays.h"
#include "builder_pool.h"
#include "optimized/cuda_builder.h"
#include "optimized/layer_kind.h"
#include "optimized/step_indexer.h"
#include "optimized/validation.h"
#include "reference/mixed_sparse_indices.h"
#include "reference/model_schedule.h"
#include "reference/step.h"

#if DSV4_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace dsv4::py {
namespace {

using namespace nb::literals;

bool given(nb::handle h) { return h.is_valid() && !h.is_none(); }

// SPEC §4 structural errors become ValueError here, in the binding's own code: the library's
// checks return their message instead of throwing it across the module (see validation.h).
void raise_if_invalid(const std::string& error, const std::string& context = std::string()) {
  if (!error.empty()) throw nb::value_error((context + error).c_str());
}

// The step's CUDA device is current during a call (as torch's device guard does), then restored.
class DeviceGuard {
 public:
  explicit DeviceGuard(const Placement& place) {
#if DSV4_WITH_CUDA
    if (!place.cuda()) return;
    int current = 0;
    if (cudaGetDevice(&current) == cudaSuccess && current != place.device.device_id) {
      if (cudaSetDevice(place.device.device_id) != cudaSuccess) {
        (void)cudaGetLastError();
        throw std::runtime_error("cannot make cuda:" + std::to_string(place.device.device_id) + " current");
      }
      previous_ = current;
    }
#else
    (void)place;
#endif
  }
  ~DeviceGuard() {
#if DSV4_WITH_CUDA
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
#endif
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// The layout every build of a step shares. Sizes come from the shapes: R = len(seq_lens),
// T = len(token_to_req), D = rows of decode_swa_indices (0 when None), as in the reference.
struct Layout {
  Placement place;
  int32_t R = 0, T = 0, D = 0;
  const int32_t* query_start_loc = nullptr;
  const int32_t* seq_lens = nullptr;
  const int32_t* token_to_req = nullptr;
  opt::Int32Matrix decode_swa_indices;
  opt::StepStructureHost host;
};

int32_t vector_size(const ArrayView& a) {
  if (a.ndim != 1) {
    throw nb::value_error(
        (std::string(a.name) + ": expected a 1-D array, got " + std::to_string(a.ndim) + "-D").c_str());
  }
  if (a.shape[0] >= INT32_MAX) throw nb::value_error((std::string(a.name) + ": too large for int32").c_str());
  return static_cast<int32_t>(a.shape[0]);
}

Layout read_layout(ArrayReader& reader, nb::handle query_start_loc, nb::handle seq_lens, nb::handle token_to_req,
                   nb::handle decode_swa_indices, nb::handle query_start_loc_cpu, nb::handle seq_lens_cpu,
                   nb::handle token_to_req_cpu) {
  Layout l;
  const ArrayView qsl = reader.view(query_start_loc, "query_start_loc");
  l.place.device = qsl.device;
  if (qsl.device.device_type == dlpack::kCUDAHost) l.place.device = dlpack::Device{dlpack::kCPU, 0};
  if (l.place.device.device_type != dlpack::kCPU && l.place.device.device_type != dlpack::kCUDA) {
    throw nb::value_error("query_start_loc: the step's tensors must be in host memory or on a CUDA device");
  }
  l.place.api = ArrayReader::exchange_api(query_start_loc);
  l.place.type = Py_TYPE(query_start_loc.ptr());
  const ArrayView lens = reader.view(seq_lens, "seq_lens");
  const ArrayView owners = reader.view(token_to_req, "token_to_req");
  l.R = vector_size(lens);
  l.T = vector_size(owners);
  l.query_start_loc = int32_vector(qsl, l.place, int64_t{l.R} + 1, "R + 1 (R = len(seq_lens))");
  l.seq_lens = int32_vector(lens, l.place, l.R, "R");
  l.token_to_req = int32_vector(owners, l.place, l.T, "T");
  if (given(decode_swa_indices)) {
    l.decode_swa_indices = int32_matrix(reader.view(decode_swa_indices, "decode_swa_indices"), l.place);
  }
  l.D = l.decode_swa_indices.rows;
  if (!l.place.cuda()) {  // host tensors are their own host copies
    l.host = opt::StepStructureHost{l.query_start_loc, l.seq_lens, l.token_to_req};
    return l;
  }
  // CUDA: the structure is validated once per step on the host copies engines already keep.
  const auto host_copy = [&](nb::handle h, const char* name, int64_t size, const char* expected) {
    if (!given(h)) {
      throw nb::value_error((std::string(name) + ": required with CUDA tensors (the host copy that the "
                                                 "step's structure is validated on, SPEC §4)")
                                .c_str());
    }
    return host_int32_vector(reader.view(h, name), size, expected);
  };
  l.host.query_start_loc = host_copy(query_start_loc_cpu, "query_start_loc_cpu", int64_t{l.R} + 1, "R + 1");
  l.host.seq_lens = host_copy(seq_lens_cpu, "seq_lens_cpu", l.R, "R");
  l.host.token_to_req = host_copy(token_to_req_cpu, "token_to_req_cpu", l.T, "T");
  return l;
}

opt::PagedCacheView paged_cache(ArrayReader& reader, nb::handle table, int32_t block_size, const char* name,
                                const Placement& place) {
  opt::PagedCacheView cache;
  const ArrayView t = reader.view(table, name);
  cache.block_table = int32_dense(t, place);
  cache.num_rows = static_cast<int32_t>(t.shape[0]);
  cache.blocks_per_row = static_cast<int32_t>(t.shape[1]);
  cache.block_size = block_size;
  return cache;
}

opt::Backend backend_of(const Placement& place) { return place.cuda() ? opt::Backend::kCuda : opt::Backend::kHost; }

// build()'s builders, one pool per backend, device and stream. Never freed: no CUDA call may
// run while the process exits.
std::shared_ptr<BuilderPool> shared_pool(const Placement& place, void* stream) {
  static auto* pools = new std::vector<std::shared_ptr<BuilderPool>>();
  const opt::Backend backend = backend_of(place);
  for (const auto& pool : *pools) {
    if (pool->backend() == backend && pool->device() == place.device.device_id && pool->stream() == stream) return pool;
  }
  constexpr size_t kWorkspaceBytes = size_t{4} << 20;  // grows on demand
  pools->push_back(std::make_shared<BuilderPool>(backend, place.device.device_id, stream, kWorkspaceBytes));
  return pools->back();
}

nb::tuple export_built(const Placement& place, const opt::BuiltIndices& built, const std::shared_ptr<void>& owner) {
  const int64_t shape[2] = {built.num_tokens, built.width};
  return nb::make_tuple(export_int32(place, built.sparse_indices, 2, shape, owner),
                        export_int32(place, built.sparse_lens, 1, shape, owner));
}

nb::tuple build(int32_t window, int32_t ratio, int32_t topk, nb::handle decode_swa_indices,
                nb::handle decode_compressed, bool decode_local, nb::handle decode_compressed_lens,
                nb::handle decode_valid, nb::handle prefill_topk, nb::handle query_start_loc, nb::handle seq_lens,
                nb::handle token_to_req, nb::handle swa_block_table, int32_t swa_block_size,
                nb::handle compressed_block_table, int32_t compressed_block_size, nb::handle query_start_loc_cpu,
                nb::handle seq_lens_cpu, nb::handle token_to_req_cpu, nb::handle stream, bool count_content_errors,
                nb::handle out) {
  ArrayReader reader;
  const Layout l = read_layout(reader, query_start_loc, seq_lens, token_to_req, decode_swa_indices, query_start_loc_cpu,
                               seq_lens_cpu, token_to_req_cpu);
  opt::BuildRequest r;
  r.window = window;
  r.ratio = ratio;
  r.topk = topk;
  r.num_requests = l.R;
  r.num_tokens = l.T;
  r.num_decode_tokens = l.D;
  r.decode_swa_indices = l.decode_swa_indices;
  if (given(decode_compressed))
    r.decode_compressed = int32_matrix(reader.view(decode_compressed, "decode_compressed"), l.place);
  r.decode_local = decode_local;
  if (given(decode_compressed_lens)) {
    r.decode_compressed_lens =
        int32_vector(reader.view(decode_compressed_lens, "decode_compressed_lens"), l.place, l.D, "D");
  }
  if (given(decode_valid)) r.decode_valid = bool_vector(reader.view(decode_valid, "decode_valid"), l.place, l.D, "D");
  if (given(prefill_topk)) {
    r.prefill_topk = int32_matrix(reader.view(prefill_topk, "prefill_topk"), l.place);
  } else {
    r.prefill_topk.rows = l.T - l.D;  // (T - D) x 0: no prefill top-k columns
  }
  r.query_start_loc = l.query_start_loc;
  r.seq_lens = l.seq_lens;
  r.token_to_req = l.token_to_req;
  r.swa = paged_cache(reader, swa_block_table, swa_block_size, "swa_block_table", l.place);
  if (given(compressed_block_table)) {
    r.compressed =
        paged_cache(reader, compressed_block_table, compressed_block_size, "compressed_block_table", l.place);
  } else if (compressed_block_size != 0) {
    throw nb::value_error("compressed_block_size is given without compressed_block_table");
  }
  CallerOutputs caller;
  if (given(out)) {
    const int64_t widest = std::max<int64_t>(r.topk, r.decode_compressed.cols);
    caller = caller_outputs(reader, out, l.place, l.T, window, int64_t{window} + (widest + 3) / 4 * 4);
    r.output = caller.view;
    r.row_capacity = caller.row_capacity;
    r.compressed_capacity = caller.compressed_capacity;
  }
  raise_if_invalid(opt::step_structure_error(r, l.host));  // SPEC §4, before any work

  const DeviceGuard guard(l.place);
  const std::shared_ptr<Lease> lease = shared_pool(l.place, call_stream(stream, l.place))->lease();
  const bool count = !l.place.cuda() || count_content_errors;
  if (count && lease->dirty) (void)lease->builder->take_content_errors();  // an earlier call's
  const opt::BuiltIndices built = lease->builder->build(r);
  lease->dirty = true;
  nb::object errors = nb::none();
  if (count) {
    errors = nb::int_(lease->builder->take_content_errors());
    lease->dirty = false;
  }
  if (given(out)) return nb::make_tuple(caller.sparse_indices, caller.sparse_lens, errors);
  const int64_t shape[2] = {built.num_tokens, built.width};  // one tuple: (indices, lens, errors)
  return nb::make_tuple(export_int32(l.place, built.sparse_indices, 2, shape, lease),
                        export_int32(l.place, built.sparse_lens, 1, shape, lease), errors);
}

// The per-step cache from Python: one C++ StepIndexer per step over a leased builder.
class PyStepIndexer {
 public:
  PyStepIndexer(std::vector<int32_t> compress_ratios, int32_t window, int32_t c4a_topk, bool cache, bool verify_on_hit,
                bool token_plan, size_t workspace_bytes)
      : ratios_(std::move(compress_ratios)), window_(window), c4a_topk_(c4a_topk), workspace_bytes_(workspace_bytes) {
    for (int32_t ratio : ratios_) {  // ValueError on an unknown ratio
      if (opt::layer_kind_from_ratio(ratio) == opt::LayerKind::kC128A) has_c128a_layers_ = true;
    }
    options_.enabled = cache;
    options_.verify_on_hit = verify_on_hit;
    options_.share_token_plan = token_plan;
  }

  void begin_step(nb::handle query_start_loc, nb::handle seq_lens, nb::handle token_to_req, nb::handle swa_block_table,
                  int32_t swa_block_size, nb::handle decode_swa_indices, nb::handle decode_valid,
                  nb::handle c4a_block_table, int32_t c4a_block_size, nb::handle c128a_block_table,
                  int32_t c128a_block_size, int32_t c128a_topk, nb::handle c128a_decode_global,
                  nb::handle c128a_decode_lens, nb::handle c128a_prefill_local, nb::handle query_start_loc_cpu,
                  nb::handle seq_lens_cpu, nb::handle token_to_req_cpu, nb::handle stream) {
    end_step();  // a step left open (an exception mid-step) ends here
    auto step = std::make_unique<Step>();
    ArrayReader& reader = step->reader;
    const Layout l = read_layout(reader, query_start_loc, seq_lens, token_to_req, decode_swa_indices,
                                 query_start_loc_cpu, seq_lens_cpu, token_to_req_cpu);
    step->place = l.place;
    opt::StepInputs& in = step->inputs;
    in.num_requests = l.R;
    in.num_tokens = l.T;
    in.num_decode_tokens = l.D;
    in.window = window_;
    in.query_start_loc = l.query_start_loc;
    in.seq_lens = l.seq_lens;
    in.token_to_req = l.token_to_req;
    in.host = l.host;
    in.decode_swa_indices = l.decode_swa_indices;
    if (given(decode_valid))
      in.decode_valid = bool_vector(reader.view(decode_valid, "decode_valid"), l.place, l.D, "D");
    in.swa = paged_cache(reader, swa_block_table, swa_block_size, "swa_block_table", l.place);
    step->has_c4a = given(c4a_block_table);
    if (step->has_c4a) in.c4a = paged_cache(reader, c4a_block_table, c4a_block_size, "c4a_block_table", l.place);
    step->has_c128a = given(c128a_block_table);
    if (step->has_c128a) {
      in.c128a = paged_cache(reader, c128a_block_table, c128a_block_size, "c128a_block_table", l.place);
      in.c128a_topk = c128a_topk;
      if (given(c128a_decode_global)) {
        in.c128a_decode_global = int32_matrix(reader.view(c128a_decode_global, "c128a_decode_global"), l.place);
      }
      if (given(c128a_decode_lens)) {
        in.c128a_decode_lens = int32_vector(reader.view(c128a_decode_lens, "c128a_decode_lens"), l.place, l.D, "D");
      }
      if (given(c128a_prefill_local)) {
        in.c128a_prefill_local = int32_matrix(reader.view(c128a_prefill_local, "c128a_prefill_local"), l.place);
      }
    }
    // The step's tensors stay referenced until end_step(): their memory is read by every layer.
    for (nb::handle h : {query_start_loc, seq_lens, token_to_req, swa_block_table, decode_swa_indices, decode_valid,
                         c4a_block_table, c128a_block_table, c128a_decode_global, c128a_decode_lens,
                         c128a_prefill_local, query_start_loc_cpu, seq_lens_cpu, token_to_req_cpu}) {
      if (given(h)) step->alive.push_back(nb::borrow(h));
    }

    // SPEC §4 before anything is leased, raised from here (validation.h): the step, and the
    // shapes of the C128A layers' metadata when the schedule has such layers.
    raise_if_invalid(opt::step_inputs_error(in));
    if (step->has_c128a && has_c128a_layers_) {
      raise_if_invalid(opt::request_shape_error(opt::layer_build_request(in, 128, nullptr)),
                       "C128A layers (c128a_* arguments): ");
    }

    const DeviceGuard guard(l.place);
    void* s = call_stream(stream, l.place);
    const opt::Backend backend = backend_of(l.place);
    if (!pool_ || pool_->backend() != backend || pool_->device() != l.place.device.device_id || pool_->stream() != s) {
      pool_ = std::make_shared<BuilderPool>(backend, l.place.device.device_id, s, workspace_bytes_);
    }
    step->lease = pool_->lease();
    // Host counts are free to take: start the step's count clean. CUDA would synchronize.
    if (!l.place.cuda() && step->lease->dirty) (void)step->lease->builder->take_content_errors();
    step->builder.emplace(*step->lease);
    step->indexer.emplace(*step->builder, in, options_, opt::StepIndexer::Validated{});
    step_ = std::move(step);
  }

  nb::tuple layer(int32_t i, nb::handle c4a_topk) {
    if (!step_) {
      throw std::logic_error(
          "StepIndexer.layer(): no step is open (begin_step() was not called, or end_step() "
          "was); a step's layers cannot be requested after it ended");
    }
    if (i < 0 || i >= static_cast<int32_t>(ratios_.size())) {
      throw nb::index_error(
          ("layer " + std::to_string(i) + " is out of range [0, " + std::to_string(ratios_.size()) + ")").c_str());
    }
    Step& s = *step_;
    const int32_t ratio = ratios_[static_cast<size_t>(i)];
    const opt::LayerKind kind = opt::layer_kind_from_ratio(ratio);
    const std::string layer_name = "layer " + std::to_string(i) + " (" + opt::layer_kind_name(kind) + ")";
    opt::C4aLayerInputs c4a;
    if (kind == opt::LayerKind::kC4A) {
      if (!given(c4a_topk)) throw nb::value_error((layer_name + ": c4a_topk (its indexer output) is required").c_str());
      if (!s.has_c4a) throw nb::value_error((layer_name + ": begin_step() was given no c4a_block_table").c_str());
      c4a = c4a_inputs(c4a_topk);
      raise_if_invalid(opt::request_shape_error(opt::layer_build_request(s.inputs, ratio, &c4a)), layer_name + ": ");
    } else if (given(c4a_topk)) {
      throw nb::value_error((layer_name + ": c4a_topk is only for C4A layers; pass None").c_str());
    } else if (kind == opt::LayerKind::kC128A && !s.has_c128a) {
      throw nb::value_error((layer_name + ": begin_step() was given no c128a_block_table").c_str());
    }
    const DeviceGuard guard(s.place);
    const int64_t hits_before = s.indexer->cache().hits();
    const opt::BuiltIndices built = s.indexer->layer_indices(ratio, kind == opt::LayerKind::kC4A ? &c4a : nullptr);
    s.last = built;
    if (s.indexer->cache().hits() > hits_before) {  // a hit: the very arrays of the first build
      for (const auto& [data, width, pair] : s.exported) {
        if (data == built.sparse_indices && width == built.width) return pair;
      }
    }
    nb::tuple pair = export_built(s.place, built, s.lease);
    if (opt::is_cacheable(kind)) s.exported.push_back({built.sparse_indices, built.width, pair});
    return pair;
  }

  int64_t content_errors() {
    if (!step_) throw std::logic_error("StepIndexer.content_errors(): no step is open; call it before end_step()");
    const DeviceGuard guard(step_->place);
    return step_->indexer->content_errors();
  }

  void end_step() {
    if (!step_) return;
    last_builder_calls_ = step_->indexer->cache().builder_calls();
    last_hits_ = step_->indexer->cache().hits();
    step_.reset();  // the builder goes back to the pool once the step's last array is gone
  }

  int64_t builder_calls() const { return step_ ? step_->indexer->cache().builder_calls() : last_builder_calls_; }
  int64_t cache_hits() const { return step_ ? step_->indexer->cache().hits() : last_hits_; }
  bool step_open() const { return step_ != nullptr; }
  const std::vector<int32_t>& compress_ratios() const { return ratios_; }
  std::string backend() const {
    return step_ ? opt::backend_name(backend_of(step_->place)) : pool_ ? opt::backend_name(pool_->backend()) : "none";
  }
  nb::tuple last_output_addresses() const {
    if (!step_) return nb::make_tuple(0, 0);
    return nb::make_tuple(reinterpret_cast<uintptr_t>(step_->last.sparse_indices),
                          reinterpret_cast<uintptr_t>(step_->last.sparse_lens));
  }

 private:
  struct Exported {
    const int32_t* data;
    int32_t width;
    nb::tuple pair;
  };
  struct Step {  // members in construction order; the indexer is destroyed before its builder
    ArrayReader reader;
    std::vector<nb::object> alive;
    Placement place;
    opt::StepInputs inputs;
    bool has_c4a = false, has_c128a = false;
    std::shared_ptr<Lease> lease;
    std::optional<LeasedBuilder> builder;
    std::optional<opt::StepIndexer> indexer;
    std::vector<Exported> exported;  // the cacheable layers' arrays, returned again on hits
    opt::BuiltIndices last;
  };

  // The C4A layer's indexer output: one [T, K] matrix (decode rows first, as an indexer writes
  // them) or a pair ([D, K] decode, [T - D, K] prefill). Read during the call only.
  opt::C4aLayerInputs c4a_inputs(nb::handle c4a_topk) {
    Step& s = *step_;
    opt::C4aLayerInputs c4a;
    c4a.topk = c4a_topk_;
    ArrayReader reader;
    if (nb::isinstance<nb::tuple>(c4a_topk) || nb::isinstance<nb::list>(c4a_topk)) {
      if (nb::len(c4a_topk) != 2)
        throw nb::value_error("c4a_topk: expected one [T, K] array or a pair ([D, K], [T - D, K])");
      c4a.decode_local = int32_matrix(reader.view(c4a_topk[0], "c4a_topk[0] (decode)"), s.place);
      c4a.prefill_topk = int32_matrix(reader.view(c4a_topk[1], "c4a_topk[1] (prefill)"), s.place);
      return c4a;
    }
    const opt::Int32Matrix all = int32_matrix(reader.view(c4a_topk, "c4a_topk"), s.place);
    const int32_t T = s.inputs.num_tokens, D = s.inputs.num_decode_tokens;
    if (all.rows != T) {
      throw nb::value_error(
          ("c4a_topk has " + std::to_string(all.rows) + " rows, expected T = " + std::to_string(T)).c_str());
    }
    c4a.decode_local = opt::Int32Matrix{all.data, D, all.cols, all.row_stride};
    c4a.prefill_topk = opt::Int32Matrix{all.data + int64_t{D} * all.row_stride, T - D, all.cols, all.row_stride};
    return c4a;
  }

  std::vector<int32_t> ratios_;
  int32_t window_;
  int32_t c4a_topk_;
  size_t workspace_bytes_;
  bool has_c128a_layers_ = false;
  opt::CacheOptions options_;
  std::shared_ptr<BuilderPool> pool_;
  std::unique_ptr<Step> step_;
  int64_t last_builder_calls_ = 0, last_hits_ = 0;
};

// ---- reference/ ----

ref::IndexMatrix to_matrix(const ArrayView& a, const Placement& place) {
  const opt::Int32Matrix m = int32_matrix(a, place);
  ref::IndexMatrix out(m.rows, m.cols);
  for (int32_t r = 0; r < m.rows; ++r) {
    for (int32_t c = 0; c < m.cols; ++c) out(r, c) = m.data[int64_t{r} * m.row_stride + c];
  }
  return out;
}

ref::IndexVector to_vector(const int32_t* data, int64_t size) {
  ref::IndexVector out(size);
  for (int64_t i = 0; i < size; ++i) out(i) = data[i];
  return out;
}

// The reference reads host arrays: its inputs are copied into Eigen (it is the oracle, not fast).
Placement host_placement(ArrayReader& reader, nb::handle query_start_loc, nb::handle seq_lens, nb::handle token_to_req,
                         ref::IndexVector* qsl, ref::IndexVector* lens, ref::IndexVector* owners) {
  if (reader.view(query_start_loc, "query_start_loc").device.device_type == dlpack::kCUDA) {
    throw nb::value_error("query_start_loc: the reference runs on the CPU; pass host arrays (e.g. tensor.cpu())");
  }
  const Layout l =
      read_layout(reader, query_start_loc, seq_lens, token_to_req, nb::none(), nb::none(), nb::none(), nb::none());
  *qsl = to_vector(l.query_start_loc, int64_t{l.R} + 1);
  *lens = to_vector(l.seq_lens, l.R);
  *owners = to_vector(l.token_to_req, l.T);
  return l.place;
}

ref::PagedCache ref_cache(ArrayReader& reader, nb::handle table, int32_t block_size, const char* name,
                          const Placement& place) {
  return ref::PagedCache{to_matrix(reader.view(table, name), place), block_size};
}

nb::object export_matrix(const Placement& place, ref::IndexMatrix* m, const std::shared_ptr<void>& owner) {
  const int64_t shape[2] = {m->rows(), m->cols()};
  return export_int32(place, m->data(), 2, shape, owner);
}

nb::object export_vector(const Placement& place, ref::IndexVector* v, const std::shared_ptr<void>& owner) {
  const int64_t shape[1] = {v->size()};
  return export_int32(place, v->data(), 1, shape, owner);
}

nb::tuple reference_build(int32_t window, int32_t ratio, int32_t topk, nb::handle decode_swa_indices,
                          nb::handle decode_compressed, bool decode_local, nb::handle decode_compressed_lens,
                          nb::handle decode_valid, nb::handle prefill_topk, nb::handle query_start_loc,
                          nb::handle seq_lens, nb::handle token_to_req, nb::handle swa_block_table,
                          int32_t swa_block_size, nb::handle compressed_block_table, int32_t compressed_block_size) {
  ArrayReader reader;
  ref::BuilderInputs in;
  const Placement place = host_placement(reader, query_start_loc, seq_lens, token_to_req, &in.query_start_loc,
                                         &in.seq_lens, &in.token_to_req);
  in.window = window;
  in.ratio = ratio;
  in.topk = topk;
  if (given(decode_swa_indices))
    in.decode_swa_indices = to_matrix(reader.view(decode_swa_indices, "decode_swa_indices"), place);
  const int64_t D = in.decode_swa_indices.rows();
  const int64_t T = in.token_to_req.size();
  if (given(decode_compressed))
    in.decode_compressed = to_matrix(reader.view(decode_compressed, "decode_compressed"), place);
  in.decode_local = decode_local;
  if (given(decode_compressed_lens)) {
    in.decode_compressed_lens =
        to_vector(int32_vector(reader.view(decode_compressed_lens, "decode_compressed_lens"), place, D, "D"), D);
  }
  if (given(decode_valid)) {
    const uint8_t* valid = bool_vector(reader.view(decode_valid, "decode_valid"), place, D, "D");
    in.decode_valid = std::vector<uint8_t>(valid, valid + D);
  }
  if (given(prefill_topk)) {
    in.prefill_topk = to_matrix(reader.view(prefill_topk, "prefill_topk"), place);
  } else {
    in.prefill_topk.resize(T - D > 0 ? T - D : 0, 0);
  }
  in.swa = ref_cache(reader, swa_block_table, swa_block_size, "swa_block_table", place);
  if (given(compressed_block_table)) {
    in.compressed = ref_cache(reader, compressed_block_table, compressed_block_size, "compressed_block_table", place);
  } else if (compressed_block_size != 0) {
    throw nb::value_error("compressed_block_size is given without compressed_block_table");
  }
  auto out = std::make_shared<ref::BuilderOutput>(ref::build_mixed_sparse_indices(in));
  return nb::make_tuple(export_matrix(place, &out->sparse_indices, out), export_vector(place, &out->sparse_lens, out),
                        out->content_errors);
}

nb::dict reference_step_metadata(nb::handle query_start_loc, nb::handle seq_lens, nb::handle token_to_req,
                                 int32_t num_decode_tokens, nb::handle decode_valid, nb::handle swa_block_table,
                                 int32_t swa_block_size, nb::handle c128a_block_table, int32_t c128a_block_size,
                                 int32_t window, int32_t max_model_len) {
  ArrayReader reader;
  ref::Step step;
  const Placement place = host_placement(reader, query_start_loc, seq_lens, token_to_req, &step.query_start_loc,
                                         &step.seq_lens, &step.token_to_req);
  step.num_decode_tokens = num_decode_tokens;
  if (given(decode_valid)) {
    const uint8_t* valid =
        bool_vector(reader.view(decode_valid, "decode_valid"), place, num_decode_tokens, "num_decode_tokens");
    step.decode_valid.assign(valid, valid + num_decode_tokens);
  }
  step.swa = ref_cache(reader, swa_block_table, swa_block_size, "swa_block_table", place);
  step.c128a = ref_cache(reader, c128a_block_table, c128a_block_size, "c128a_block_table", place);
  step.max_model_len = max_model_len;
  struct Metadata {
    ref::IndexMatrix decode_swa_indices;
    ref::C128aMetadata c128a;
  };
  auto m = std::make_shared<Metadata>();
  m->decode_swa_indices = ref::decode_swa_indices(step, window);
  m->c128a = ref::c128a_metadata(step);
  nb::dict out;
  out["decode_swa_indices"] = export_matrix(place, &m->decode_swa_indices, m);
  out["c128a_topk"] = m->c128a.effective_width;
  out["c128a_decode_global"] = export_matrix(place, &m->c128a.decode_global, m);
  out["c128a_decode_lens"] = export_vector(place, &m->c128a.decode_lens, m);
  out["c128a_prefill_local"] = export_matrix(place, &m->c128a.prefill_local, m);
  return out;
}

nb::dict schedule_dict(const ref::ModelSchedule& s) {
  nb::dict d;
  d["name"] = s.name;
  d["compress_ratios"] = s.compress_ratios;
  d["window"] = s.window;
  d["c4a_topk"] = s.c4a_topk;
  d["main_block_size"] = s.main_block_size;
  return d;
}

}  // namespace
}  // namespace dsv4::py

NB_MODULE(_core, m) {
  using namespace dsv4::py;
  namespace opt = dsv4::opt;
  m.doc() = "dsv4_indices._core: bindings of the DeepSeek-V4 mixed sparse index builder (see dsv4_indices).";
  // The library's std exceptions become Python ones in this module's own translator, ahead of
  // nanobind's default one: on the H200 (Python 3.12 venv with torch loaded) a
  // std::invalid_argument from validation reaching the default translator crashed the
  // interpreter, while nanobind's own exception types were translated fine.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_NoMemory();
    } catch (const std::logic_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const std::runtime_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.def("build", &build, nb::kw_only(), "window"_a, "ratio"_a, "topk"_a, "decode_swa_indices"_a = nb::none(),
        "decode_compressed"_a = nb::none(), "decode_local"_a = false, "decode_compressed_lens"_a = nb::none(),
        "decode_valid"_a = nb::none(), "prefill_topk"_a = nb::none(), "query_start_loc"_a, "seq_lens"_a,
        "token_to_req"_a, "swa_block_table"_a, "swa_block_size"_a, "compressed_block_table"_a = nb::none(),
        "compressed_block_size"_a = 0, "query_start_loc_cpu"_a = nb::none(), "seq_lens_cpu"_a = nb::none(),
        "token_to_req_cpu"_a = nb::none(), "stream"_a = nb::none(), "count_content_errors"_a = false,
        "out"_a = nb::none(),
        R"doc(One build of a layer's mixed sparse indices (SPEC §3) on the optimized path.

Arguments are named as in SPEC §3; arrays are int32 (decode_valid: bool or uint8), all on one
device: host memory (numpy, torch CPU: the host backend) or one CUDA device (torch CUDA: the
CUDA backend, launched on `stream`). R = len(seq_lens), T = len(token_to_req), D = rows of
decode_swa_indices (None: D = 0). Matrices need column stride 1 (any row stride); vectors and
block tables must be contiguous. Nothing is copied: the inputs are read in place.

CUDA tensors also need the host copies query_start_loc_cpu, seq_lens_cpu, token_to_req_cpu
(the structure is validated on them, SPEC §4). `stream`: a cudaStream_t as int (e.g.
torch.cuda.current_stream().cuda_stream) or a torch.cuda.Stream; None: the framework's current
stream (torch), else the legacy default stream. Ignored for host arrays.

Returns (sparse_indices [T, W + P], sparse_lens [T], content_errors) in the inputs' framework
(numpy in -> numpy out, torch in -> torch out). The outputs live in the builder's workspace,
not copied; that memory is reused only after the last reference to them is gone.
content_errors: the SPEC §4 count of this build (host backend); on CUDA None unless
count_content_errors=True, which synchronizes the stream.

out: None, or a pair (sparse_indices, sparse_lens) of the caller's arrays to build into
(SPEC §7 caller-owned outputs, e.g. an engine's persistent buffers): int32, writable, of the
inputs' framework and device (numpy arrays for numpy inputs, torch tensors on the inputs'
device for torch inputs). sparse_indices [T_cap, W + P_cap] with T_cap >= T and P_cap >= P
(P = round_up(max(topk, Kd), 4)), column stride 1, a row stride that is a multiple of 4
elements and 16-byte aligned data (a view [:T_cap, :W + P_cap] of a wider buffer qualifies);
sparse_lens [T_cap], contiguous. Every element of both is written: rows [0, T) as above,
columns [W + P, W + P_cap) -1, rows [T, T_cap) -1 with length 0; nothing outside them (the
buffer's columns past the view) and nothing at all when an error is raised. They must not
overlap the inputs. Returned as they are, (out[0], out[1], content_errors): the very objects,
written in place on `stream`; nothing is allocated.

Raises ValueError for structural errors (SPEC §4, the C++ message naming field, row and value)
and for a wrong rank, layout, size or device; TypeError for a wrong dtype or a non-array. A bad
`out` raises naming out[0] (sparse_indices) or out[1] (sparse_lens): TypeError when it is not a
pair, not an array, not int32 or not of the inputs' framework; ValueError for the device, a
shape below (T, W + P) / T_cap, strides, alignment or a read-only array.)doc");

  nb::class_<PyStepIndexer>(m, "StepIndexer", R"doc(The per-step layer-kind cache (SPEC §5) for one model.

Per engine step: begin_step(...) with the step's tensors, then layer(i) for every layer i in
order (C4A layers pass their indexer output), then end_step(). SWA-only and C128A layers are
built once per step and cache key; later layers of that key get the very same arrays (same
Python objects, same storage). C4A layers always build. The backend follows the step's
tensors: host memory -> host backend, CUDA -> the CUDA backend on the step's stream.

Outputs are views of the builder's workspace: they stay valid as long as Python references
them, also after end_step(); the memory of a step is reused only when the step has ended and
none of its arrays is referenced any more (then the next step reuses it: no allocation).)doc")
      .def(nb::init<std::vector<int32_t>, int32_t, int32_t, bool, bool, bool, size_t>(), "compress_ratios"_a,
           nb::kw_only(), "window"_a = 128, "c4a_topk"_a = 512, "cache"_a = true, "verify_on_hit"_a = false,
           "token_plan"_a = true, "workspace_bytes"_a = size_t{64} << 20,
           R"doc(compress_ratios: one per layer (0 or 1: SWA-only, 4: C4A, 128: C128A; others raise
ValueError), e.g. reference.deepseek_v4_flash()['compress_ratios']. window: W. c4a_topk: the
top-k of C4A layers (the indexer output may have fewer columns). cache=False builds every layer
(the uncached baseline); verify_on_hit=True rebuilds on every hit and raises on a difference.
token_plan=False: every build reads its prefill rows' request metadata itself (by default the
step's first build of prefill rows works out each prefill token's request and position once,
and the later builds read that: one dependent read less per row on the GPU; same outputs).
workspace_bytes: the initial size of each CUDA builder's output workspace (it grows on demand).)doc")
      .def("begin_step", &PyStepIndexer::begin_step, nb::kw_only(), "query_start_loc"_a, "seq_lens"_a, "token_to_req"_a,
           "swa_block_table"_a, "swa_block_size"_a, "decode_swa_indices"_a = nb::none(), "decode_valid"_a = nb::none(),
           "c4a_block_table"_a = nb::none(), "c4a_block_size"_a = 0, "c128a_block_table"_a = nb::none(),
           "c128a_block_size"_a = 0, "c128a_topk"_a = 0, "c128a_decode_global"_a = nb::none(),
           "c128a_decode_lens"_a = nb::none(), "c128a_prefill_local"_a = nb::none(),
           "query_start_loc_cpu"_a = nb::none(), "seq_lens_cpu"_a = nb::none(), "token_to_req_cpu"_a = nb::none(),
           "stream"_a = nb::none(),
           R"doc(Starts a step: reads (without copying) and validates the step's tensors once (SPEC §2, §4, §6).

query_start_loc [R+1], seq_lens [R], token_to_req [T]; decode_swa_indices [D, W] (None: no
decode tokens; D is its row count); decode_valid [D] (bool/uint8, C4A layers); the three paged
caches (block table [R, NB] + block size; c4a/c128a only when the schedule has such layers);
the C128A metadata: c128a_topk (E), c128a_decode_global [D, E], c128a_decode_lens [D],
c128a_prefill_local [T-D, E] (reference.step_metadata computes all of these from the step).
CUDA tensors also need query_start_loc_cpu, seq_lens_cpu, token_to_req_cpu (host copies) and
run on `stream` (as in build()). The tensors are referenced until end_step(). A step still
open is ended first. Raises ValueError for a structurally invalid step (SPEC §4), and for
C128A metadata of the wrong shape when the schedule has C128A layers; no step opens then.)doc")
      .def("layer", &PyStepIndexer::layer, "i"_a, "c4a_topk"_a = nb::none(),
           R"doc(Layer i's indices: (sparse_indices [T, W + P], sparse_lens [T]) in the step's framework.

C4A layers need c4a_topk, their indexer output: int32 [T, K] (decode rows first) or a pair
([D, K], [T - D, K]) of local compressed indices, -1 padded; other layers take None. A cache
hit returns the very tuple of the key's first build. Raises RuntimeError outside a step,
IndexError for a layer out of range, ValueError for bad inputs.)doc")
      .def("content_errors", &PyStepIndexer::content_errors,
           R"doc(Content errors (SPEC §4) counted by this step's builds; 0 for a valid step.

Host: exact. CUDA: synchronizes the stream and counts the builds on this step's builder since
that builder's count was last read, which is this step's when it is read every step. Call it
before end_step().)doc")
      .def("end_step", &PyStepIndexer::end_step,
           R"doc(Ends the step: later layer() calls raise. Arrays already returned stay valid while referenced.)doc")
      .def_prop_ro("builder_calls", &PyStepIndexer::builder_calls,
                   "Builder calls of the open (or last) step: Flash 23, Pro 31 with the cache; one per layer without.")
      .def_prop_ro("cache_hits", &PyStepIndexer::cache_hits, "Cache hits of the open (or last) step.")
      .def_prop_ro("step_open", &PyStepIndexer::step_open, "True between begin_step() and end_step().")
      .def_prop_ro("compress_ratios", &PyStepIndexer::compress_ratios, "The schedule: one ratio per layer.")
      .def_prop_ro("backend", &PyStepIndexer::backend, "'host' or 'cuda' (the step's), 'none' before the first step.")
      .def_prop_ro("last_output_addresses", &PyStepIndexer::last_output_addresses,
                   "(sparse_indices, sparse_lens) addresses the last layer() call's build wrote (zero-copy checks).");

  m.def("reference_build", &reference_build, nb::kw_only(), "window"_a, "ratio"_a, "topk"_a,
        "decode_swa_indices"_a = nb::none(), "decode_compressed"_a = nb::none(), "decode_local"_a = false,
        "decode_compressed_lens"_a = nb::none(), "decode_valid"_a = nb::none(), "prefill_topk"_a = nb::none(),
        "query_start_loc"_a, "seq_lens"_a, "token_to_req"_a, "swa_block_table"_a, "swa_block_size"_a,
        "compressed_block_table"_a = nb::none(), "compressed_block_size"_a = 0,
        R"doc(The oracle (reference/, SPEC §3 in plain C++ + Eigen): the same arguments as build(), host arrays only.

Returns (sparse_indices, sparse_lens, content_errors) in the inputs' framework. Raises
ValueError with the reference's message for structural errors (SPEC §4).)doc");
  m.def("reference_step_metadata", &reference_step_metadata, nb::kw_only(), "query_start_loc"_a, "seq_lens"_a,
        "token_to_req"_a, "num_decode_tokens"_a, "decode_valid"_a = nb::none(), "swa_block_table"_a, "swa_block_size"_a,
        "c128a_block_table"_a, "c128a_block_size"_a, "window"_a = 128, "max_model_len"_a = 1 << 20,
        R"doc(The per-step metadata engines compute (SPEC §6), by the reference, host arrays only.

Returns a dict of begin_step() arguments: decode_swa_indices [D, W], c128a_topk (E),
c128a_decode_global [D, E], c128a_decode_lens [D], c128a_prefill_local [T - D, E].)doc");
  m.def(
      "deepseek_v4_flash", [] { return schedule_dict(dsv4::ref::deepseek_v4_flash()); },
      "DeepSeek-V4-Flash's schedule: dict(name, compress_ratios (43 layers), window, c4a_topk, main_block_size).");
  m.def(
      "deepseek_v4_pro", [] { return schedule_dict(dsv4::ref::deepseek_v4_pro()); },
      "DeepSeek-V4-Pro's schedule: dict(name, compress_ratios (61 layers), window, c4a_topk, main_block_size).");
  m.def("cuda_available", &opt::cuda_device_present,
        "True when this build has the CUDA backend and a CUDA device is visible.");
#if DSV4_WITH_CUDA
  m.attr("cuda_compiled") = true;
#else
  m.attr("cuda_compiled") = false;
#endif
}
