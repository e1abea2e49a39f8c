#include "harness/graph_step.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "harness/compare_build.h"
#include "optimized/layer_kind.h"
#include "reference/sharing_modes.h"
#include "reference/step.h"

namespace dsv4::harness {
namespace {

constexpr int32_t kGarbage = 0x7eadbeef;
constexpr int32_t kSwaBlock = 64, kC4aBlock = 64, kC128aBlock = 2;  // production (SPEC §6)

int32_t div_up(int32_t a, int32_t b) { return (a + b - 1) / b; }

ref::IndexMatrix garbage(int32_t rows, int32_t cols) { return ref::IndexMatrix::Constant(rows, cols, kGarbage); }

ref::PagedCache garbage_cache(int32_t rows, int32_t blocks, int32_t block_size, std::mt19937_64& rng) {
  ref::PagedCache cache(ref::IndexMatrix(rows, blocks), block_size);
  std::uniform_int_distribution<int32_t> any(-3, 5000);  // valid-looking ids: reading them shows
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t j = 0; j < blocks; ++j) cache.block_table(r, j) = any(rng);
  return cache;
}

opt::OutputView output_view(opt::BackendBuffer& indices, opt::BackendBuffer& lens, int64_t row_stride) {
  return opt::OutputView{static_cast<int32_t*>(indices.data()), row_stride, static_cast<int32_t*>(lens.data())};
}

template <class T>
void upload_to(opt::BackendBuffer* buffer, const T* data, size_t count) {
  buffer->copy_from_host(data, count * sizeof(T));
}

// `live` in `rows` x `cols`: -1 right of its columns, stale rows below it.
ref::IndexMatrix padded(const ref::IndexMatrix& live, Eigen::Index rows, Eigen::Index cols) {
  ref::IndexMatrix out = ref::IndexMatrix::Constant(rows, cols, kGarbage);
  const Eigen::Index r = std::min(live.rows(), rows), c = std::min(live.cols(), cols);
  out.topRows(r).setConstant(-1);
  out.topLeftCorner(r, c) = live.topLeftCorner(r, c);
  return out;
}

template <class T>
void put(opt::BackendBuffer* buffer, const std::vector<T>& image) {
  upload_to(buffer, image.data(), image.size());
}

}  // namespace

PersistentStepHost graph_contents(const StepCase& c) {
  if (!c.persistent) throw std::invalid_argument("graph_contents: the step case has no persistent buffers");
  const PersistentStep& p = *c.persistent;
  const ref::Step& s = c.step;
  const int32_t D_cap = p.decode_capacity, prefill_rows = p.prefill_capacity, P_cap = p.c128a_capacity;
  PersistentStepHost h;
  h.sizes = p.sizes;
  h.query_start_loc = p.query_start_loc;
  h.seq_lens = p.seq_lens;
  h.token_to_req = p.token_to_req;
  h.decode_valid = p.decode_valid;
  if (h.decode_valid.empty()) h.decode_valid.assign(static_cast<size_t>(D_cap), 1);
  h.swa = s.swa;
  h.c4a = s.c4a;
  h.c128a = s.c128a;
  h.decode_swa_indices = padded(ref::decode_swa_indices(s, c.schedule.window), D_cap, c.schedule.window);
  const ref::C128aMetadata c128a = ref::c128a_metadata(s);
  h.c128a_decode_global = padded(c128a.decode_global, D_cap, P_cap);
  h.c128a_decode_lens = ref::IndexVector::Constant(D_cap, kGarbage);
  h.c128a_decode_lens.head(std::min<Eigen::Index>(c128a.decode_lens.size(), D_cap)) =
      c128a.decode_lens.head(std::min<Eigen::Index>(c128a.decode_lens.size(), D_cap));
  h.c128a_prefill_local = padded(c128a.prefill_local, prefill_rows, P_cap);
  for (int32_t layer = 0; layer < c.schedule.num_layers(); ++layer) {
    if (ref::layer_kind_from_ratio(c.schedule.compress_ratios[static_cast<size_t>(layer)]) != ref::LayerKind::kC4A)
      continue;
    const ref::C4aIndexerOutput& out = p.c4a_per_layer.at(static_cast<size_t>(layer));
    h.c4a_decode_local.push_back(out.decode_local);
    h.c4a_prefill_topk.push_back(out.prefill_topk);
    h.c4a_topk.push_back(c4a_topk(c.layout, layer, c.schedule.c4a_topk));
  }
  return h;
}

opt::BackendBuffer* GraphStepBuffers::buffer(size_t bytes) {
  buffers_.emplace_back(backend_, std::max<size_t>(bytes, 4));
  return &buffers_.back();
}

GraphStepBuffers::GraphStepBuffers(opt::Backend backend, const ref::ModelSchedule& schedule,
                                   const GraphCapacities& capacities, opt::SharingMode mode)
    : backend_(backend), mode_(mode), schedule_(schedule), capacities_(capacities) {
  const GraphCapacities& c = capacities;
  const int32_t W = schedule.window, T_cap = c.tokens, R_cap = c.requests;
  const int32_t c128a_width = div_up(div_up(c.max_context, 128), 128) * 128;  // max_compressed (SPEC §6)
  const auto c4a_count = static_cast<size_t>(schedule.count(ref::LayerKind::kC4A));
  std::mt19937_64 rng(1);
  host_.query_start_loc = ref::IndexVector::Constant(R_cap + 1, -kGarbage);
  host_.seq_lens = ref::IndexVector::Constant(R_cap, kGarbage);
  host_.token_to_req = ref::IndexVector::Constant(T_cap, -1);
  host_.decode_valid.assign(static_cast<size_t>(T_cap), 7);
  host_.swa = garbage_cache(c.table_rows, div_up(c.max_context, kSwaBlock), kSwaBlock, rng);
  host_.c4a = garbage_cache(c.table_rows, c.max_context / 4 / kC4aBlock + 1, kC4aBlock, rng);
  host_.c128a = garbage_cache(c.table_rows, c.max_context / 128 / kC128aBlock + 1, kC128aBlock, rng);
  host_.decode_swa_indices = garbage(T_cap, W);
  host_.c128a_decode_global = garbage(T_cap, c128a_width);
  host_.c128a_decode_lens = ref::IndexVector::Constant(T_cap, kGarbage);
  host_.c128a_prefill_local = ref::IndexMatrix(0, c128a_width);  // decode steps only
  host_.c4a_decode_local.assign(c4a_count, garbage(T_cap, schedule.c4a_topk));
  host_.c4a_prefill_topk.assign(c4a_count, ref::IndexMatrix(0, schedule.c4a_topk));
  host_.c4a_topk.assign(c4a_count, schedule.c4a_topk);
  stage();
}

GraphStepBuffers::GraphStepBuffers(opt::Backend backend, const StepCase& c, opt::SharingMode mode)
    : backend_(backend),
      mode_(mode),
      schedule_(c.schedule),
      layout_(c.layout),
      output_row_padding_(c.persistent ? c.persistent->output_row_padding : 0),
      host_(graph_contents(c)) {
  stage();
}

void GraphStepBuffers::stage() {
  const PersistentStepHost& h = host_;
  const int32_t W = schedule_.window;
  const auto T_cap = static_cast<int32_t>(h.token_to_req.size());
  const auto matrix = [&](const ref::IndexMatrix& m, MatrixLayout layout, Placed& placed) {
    const auto image_ints = static_cast<size_t>(layout.misalign + m.rows() * (m.cols() + layout.row_padding));
    placed = Placed{buffer(image_ints * 4), layout};  // what strided_image(m, layout) fills
    return opt::Int32Matrix{static_cast<const int32_t*>(placed.buffer->data()) + layout.misalign,
                            static_cast<int32_t>(m.rows()), static_cast<int32_t>(m.cols()),
                            m.cols() + layout.row_padding};
  };
  const auto table = [&](const ref::PagedCache& cache, const TableLayout& t, Placed& placed) {
    const opt::Int32Matrix rows = matrix(cache.block_table, MatrixLayout{t.row_padding, 0}, placed);
    opt::PagedCacheView view;
    view.block_table = rows.data;
    view.num_rows = rows.rows;
    view.blocks_per_row = rows.cols;
    view.row_stride = rows.row_stride;
    view.block_size = cache.block_size;
    view.block_span = cache.span();
    view.base_offset = cache.base_offset;
    return view;
  };

  sizes_ = buffer(sizeof(opt::StepSizes));
  statuses_ = buffer(opt::kLayerKinds * sizeof(opt::MetadataStatus));
  query_start_loc_ = buffer(static_cast<size_t>(h.query_start_loc.size()) * 4);
  seq_lens_ = buffer(static_cast<size_t>(h.seq_lens.size()) * 4);
  token_to_req_ = buffer(static_cast<size_t>(T_cap) * 4);
  decode_valid_ = buffer(h.decode_valid.size());
  c128a_lens_ = buffer(static_cast<size_t>(h.c128a_decode_lens.size()) * 4);

  opt::StepInputs& step = spec_.capacities;
  step.num_requests = static_cast<int32_t>(h.seq_lens.size());
  step.num_tokens = T_cap;
  step.num_decode_tokens = static_cast<int32_t>(h.decode_swa_indices.rows());
  step.window = W;
  step.query_start_loc = static_cast<const int32_t*>(query_start_loc_->data());
  step.seq_lens = static_cast<const int32_t*>(seq_lens_->data());
  step.token_to_req = static_cast<const int32_t*>(token_to_req_->data());
  if (!layout_.drop_decode_valid) step.decode_valid = static_cast<const uint8_t*>(decode_valid_->data());
  step.swa = table(h.swa, layout_.swa_table, swa_table_);
  if (!layout_.drop_c4a_table) step.c4a = table(h.c4a, layout_.c4a_table, c4a_table_);  // else the SWA table
  if (!layout_.drop_c128a_table) step.c128a = table(h.c128a, layout_.c128a_table, c128a_table_);
  step.decode_swa_indices = matrix(h.decode_swa_indices, layout_.decode_swa_indices, decode_swa_);
  const auto P_cap = static_cast<int32_t>(h.c128a_decode_global.cols());
  step.c128a_topk = P_cap;  // SPEC §7: C128A recorded at its capacity
  step.c128a_decode_global = matrix(h.c128a_decode_global, layout_.c128a_decode_global, c128a_global_);
  if (!layout_.drop_c128a_decode_lens) step.c128a_decode_lens = static_cast<const int32_t*>(c128a_lens_->data());
  step.c128a_prefill_local = matrix(h.c128a_prefill_local, layout_.c128a_prefill_local, c128a_prefill_);

  c4a_layers_.clear();
  for (int32_t layer = 0; layer < schedule_.num_layers(); ++layer)
    if (ref::layer_kind_from_ratio(schedule_.compress_ratios[static_cast<size_t>(layer)]) == ref::LayerKind::kC4A)
      c4a_layers_.push_back(layer);
  c4a_decode_.resize(c4a_layers_.size());
  c4a_prefill_.resize(c4a_layers_.size());
  for (size_t k = 0; k < c4a_layers_.size(); ++k) {
    opt::C4aLayerInputs layer;
    layer.topk = h.c4a_topk.at(k);
    layer.decode_local = matrix(h.c4a_decode_local.at(k), layer_entry(layout_.c4a_decode_local, c4a_layers_[k]), c4a_decode_[k]);
    layer.prefill_topk = matrix(h.c4a_prefill_topk.at(k), layer_entry(layout_.c4a_prefill_topk, c4a_layers_[k]), c4a_prefill_[k]);
    spec_.c4a.push_back(layer);
  }
  spec_.compress_ratios = schedule_.compress_ratios;
  spec_.run_time_sizes = static_cast<const opt::StepSizes*>(sizes_->data());
  spec_.statuses = static_cast<opt::MetadataStatus*>(statuses_->data());
  // Outputs with rows wider than the build (a stride other than the width), every element
  // 0x5a5a5a5a until a replay writes it: what a build leaves unwritten shows.
  const auto output = [&](int32_t width) {
    const int64_t stride = (width + 3) / 4 * 4 + output_row_padding_;
    opt::BackendBuffer* indices = buffer(static_cast<size_t>(T_cap * stride) * 4);
    opt::BackendBuffer* lens = buffer(static_cast<size_t>(T_cap) * 4);
    put(indices, std::vector<int32_t>(indices->bytes() / 4, 0x5a5a5a5a));
    put(lens, std::vector<int32_t>(lens->bytes() / 4, 0x5a5a5a5a));
    return output_view(*indices, *lens, stride);
  };
  // Split: the SWA segment, and compressed segments of P_cap columns (SWA-only: none).
  spec_.mode = mode_;
  const int32_t combined = mode_ == opt::SharingMode::kSplit ? 0 : W;
  if (mode_ == opt::SharingMode::kSplit) {
    spec_.outputs.swa_segment = output(W);
    spec_.outputs.swa_segment.sparse_lens = nullptr;  // the segment has no lengths
  }
  spec_.outputs.swa_only = output(combined);
  spec_.outputs.c128a = output(combined + opt::padded_compressed_width(P_cap, P_cap));
  for (const opt::C4aLayerInputs& layer : spec_.c4a) {
    spec_.outputs.c4a.push_back(output(combined + opt::padded_compressed_width(layer.topk, layer.decode_local.cols)));
  }
  upload();
}

void GraphStepBuffers::draw_decode_step(std::mt19937_64& rng, int32_t requests, int32_t context) {
  if (!capacities_) throw std::logic_error("draw_decode_step: these buffers hold a step case, not decode-step capacities");
  const GraphCapacities& c = *capacities_;
  const auto uniform = [&](int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); };
  // The live step as the reference sees it: R decode requests of 1 or 2 tokens (speculative).
  ref::Step step;
  step.max_model_len = c.max_context;
  const int32_t wanted = requests > 0 ? std::min(requests, c.requests) : uniform(0, c.requests);
  std::vector<int32_t> starts{0}, seq_lens, token_to_req;
  for (int32_t r = 0; r < wanted; ++r) {
    const int32_t q = requests == 0 && uniform(0, 7) == 0 ? 2 : 1;
    if (starts.back() + q > c.tokens) break;
    starts.push_back(starts.back() + q);
    seq_lens.push_back(context > 0 ? std::min(context, c.max_context) : uniform(q, c.max_context));
    for (int32_t i = 0; i < q; ++i) token_to_req.push_back(r);
  }
  const auto R = static_cast<int32_t>(seq_lens.size()), T = starts.back();
  step.query_start_loc = Eigen::Map<ref::IndexVector>(starts.data(), R + 1);
  step.seq_lens = Eigen::Map<ref::IndexVector>(seq_lens.data(), R);
  step.token_to_req = Eigen::Map<ref::IndexVector>(token_to_req.data(), T);
  step.num_decode_tokens = T;
  step.decode_valid.resize(static_cast<size_t>(T));
  for (uint8_t& valid : step.decode_valid) valid = requests > 0 || uniform(0, 15) != 0;  // some padding tokens
  const auto live_rows = [&](ref::PagedCache& persistent) {
    for (int32_t r = 0; r < R; ++r)
      for (Eigen::Index j = 0; j < persistent.block_table.cols(); ++j) persistent.block_table(r, j) = uniform(0, 100000);
    return ref::PagedCache(persistent.block_table.topRows(R), persistent.block_size);
  };
  step.swa = live_rows(host_.swa);
  step.c4a = live_rows(host_.c4a);
  step.c128a = live_rows(host_.c128a);

  // Into the persistent buffers; everything past T, D and R keeps what earlier steps left.
  PersistentStepHost& h = host_;
  h.sizes = ref::RunTimeSizes{T, T, R};
  h.query_start_loc.head(R + 1) = step.query_start_loc;
  h.seq_lens.head(R) = step.seq_lens;
  h.token_to_req.head(T) = step.token_to_req;
  h.token_to_req.tail(c.tokens - T).setConstant(-1);  // sentinel request ids of padded rows
  std::copy(step.decode_valid.begin(), step.decode_valid.end(), h.decode_valid.begin());
  h.decode_swa_indices.topRows(T) = ref::decode_swa_indices(step, schedule_.window);
  const ref::C128aMetadata c128a = ref::c128a_metadata(step);
  h.c128a_decode_global.topRows(T).setConstant(-1);
  h.c128a_decode_global.topLeftCorner(T, c128a.effective_width) = c128a.decode_global;
  h.c128a_decode_lens.head(T) = c128a.decode_lens;
  for (ref::IndexMatrix& picks : h.c4a_decode_local) {
    for (int32_t t = 0; t < T; ++t) {
      const int32_t compressed = (ref::token_position(step, t) + 1) / 4;
      const int32_t n = std::min<int32_t>(uniform(0, 3) == 0 ? uniform(0, 8) : static_cast<int32_t>(picks.cols()), compressed);
      for (Eigen::Index j = 0; j < picks.cols(); ++j) picks(t, j) = j < n ? uniform(0, compressed - 1) : -1;
    }
  }
}

void GraphStepBuffers::upload() {
  const opt::StepSizes sizes{host_.sizes.num_tokens, host_.sizes.num_decode_tokens, host_.sizes.num_requests};
  upload_to(sizes_, &sizes, 1);
  std::vector<opt::MetadataStatus> statuses(opt::kLayerKinds, opt::MetadataStatus{-1, -1, -1, -1, 77, 0});
  upload_to(statuses_, statuses.data(), statuses.size());  // stale words must be overwritten
  upload_to(query_start_loc_, host_.query_start_loc.data(), static_cast<size_t>(host_.query_start_loc.size()));
  upload_to(seq_lens_, host_.seq_lens.data(), static_cast<size_t>(host_.seq_lens.size()));
  upload_to(token_to_req_, host_.token_to_req.data(), static_cast<size_t>(host_.token_to_req.size()));
  upload_to(decode_valid_, host_.decode_valid.data(), host_.decode_valid.size());
  upload_to(c128a_lens_, host_.c128a_decode_lens.data(), static_cast<size_t>(host_.c128a_decode_lens.size()));
  const auto place = [](const Placed& at, const ref::IndexMatrix& m) {
    if (at.buffer != nullptr) put(at.buffer, strided_image(m, at.layout));
  };
  place(swa_table_, host_.swa.block_table);
  place(c4a_table_, host_.c4a.block_table);
  place(c128a_table_, host_.c128a.block_table);
  place(decode_swa_, host_.decode_swa_indices);
  place(c128a_global_, host_.c128a_decode_global);
  place(c128a_prefill_, host_.c128a_prefill_local);
  for (size_t k = 0; k < c4a_decode_.size(); ++k) {
    place(c4a_decode_[k], host_.c4a_decode_local[k]);
    place(c4a_prefill_[k], host_.c4a_prefill_topk[k]);
  }
}

ref::BuilderInputs GraphStepBuffers::reference_inputs(int32_t layer) const {
  const auto T_cap = static_cast<int32_t>(host_.token_to_req.size());
  const auto P_cap = static_cast<int32_t>(host_.c128a_decode_global.cols());
  ref::BuilderInputs in;
  in.window = schedule_.window;
  in.query_start_loc = host_.query_start_loc;
  in.seq_lens = host_.seq_lens;
  in.token_to_req = host_.token_to_req;
  in.swa = host_.swa;
  in.decode_swa_indices = host_.decode_swa_indices;
  switch (ref::layer_kind_from_ratio(schedule_.compress_ratios[static_cast<size_t>(layer)])) {
    case ref::LayerKind::kSwaOnly:
      in.ratio = 1;
      // As StepGraph records it: the step's prefill capacity T_cap - D_cap, no columns.
      in.prefill_topk = ref::IndexMatrix(T_cap - static_cast<int32_t>(host_.decode_swa_indices.rows()), 0);
      break;
    case ref::LayerKind::kC128A:
      in.ratio = 128;
      in.topk = P_cap;  // SPEC §7
      in.decode_compressed = host_.c128a_decode_global;
      if (!layout_.drop_c128a_decode_lens) in.decode_compressed_lens = host_.c128a_decode_lens;
      in.prefill_topk = host_.c128a_prefill_local;
      if (!layout_.drop_c128a_table) in.compressed = host_.c128a;
      break;
    case ref::LayerKind::kC4A: {
      const auto k = static_cast<size_t>(std::find(c4a_layers_.begin(), c4a_layers_.end(), layer) - c4a_layers_.begin());
      in.ratio = 4;
      in.topk = host_.c4a_topk.at(k);
      in.decode_compressed = host_.c4a_decode_local.at(k);
      in.decode_local = true;
      if (!layout_.drop_decode_valid) in.decode_valid = host_.decode_valid;
      in.prefill_topk = host_.c4a_prefill_topk.at(k);
      if (!layout_.drop_c4a_table) in.compressed = host_.c4a;
      break;
    }
  }
  return in;
}

opt::MetadataStatus GraphStepBuffers::status(opt::LayerKind kind) const {
  opt::MetadataStatus status{};
  opt::copy_to_host(backend_, &status, spec_.statuses + static_cast<int>(kind), sizeof(status));
  return status;
}

namespace {

// Kind `kind`'s status word against the reference's checks of the same metadata.
void compare_status(const GraphStepBuffers& buffers, opt::LayerKind kind, const ref::MetadataStatus& w,
                    bool valid_step, Mismatch where, std::vector<Mismatch>& mismatches) {
  const opt::MetadataStatus s = buffers.status(kind);
  if (valid_step && w.check != ref::MetadataCheck::kNone) {
    Mismatch m = where;
    m.backend = "reference";
    m.what = "metadata status on a valid step";
    m.detail = "the reference's checks found " + ref::describe(w) +
               " in the persistent buffers of a valid step (for a generated step: a generator bug)";
    mismatches.push_back(m);
  }
  if (s.check != static_cast<int32_t>(w.check) || s.row != w.row || s.value != w.value ||
      s.failures != static_cast<uint32_t>(w.failures) ||
      s.field != static_cast<int32_t>(kernels::metadata_field(static_cast<kernels::MetadataCheck>(w.check)))) {
    where.what = "status word";
    where.expected = static_cast<int32_t>(w.check);
    where.actual = s.check;
    where.detail = "reference " + ref::describe(w) + "; got check " + std::to_string(s.check) + " field " +
                   std::to_string(s.field) + " row " + std::to_string(s.row) + " value " + std::to_string(s.value) +
                   " failures " + std::to_string(s.failures);
    mismatches.push_back(where);
  }
}

void append(std::vector<Mismatch>& to, std::vector<Mismatch> found, const std::string& part = "") {
  for (Mismatch& m : found) {
    if (!part.empty()) m.path += ", " + part;
    to.push_back(std::move(m));
  }
}

}  // namespace

std::string graph_path_name(opt::SharingMode mode) {
  return mode == opt::SharingMode::kSplit ? "graph replay, split" : "graph replay";
}

std::vector<Mismatch> replay_and_compare(opt::StepGraph& graph, GraphStepBuffers& buffers,
                                         const ref::ModelSchedule& schedule, bool valid_step) {
  (void)graph.content_errors();  // only this replay's
  graph.replay();
  const int64_t errors = graph.content_errors();  // CUDA: waits for the replay
  const bool split = graph.mode() == opt::SharingMode::kSplit;
  const int32_t W = schedule.window;
  std::vector<Mismatch> mismatches;
  std::map<ref::LayerKind, ref::CheckedBuild> shared;  // SWA-only and C128A: one build per step
  int64_t want_errors = 0;
  bool kind_checked[opt::kLayerKinds] = {false, false, false};
  const ref::RunTimeSizes sizes = buffers.host().sizes;
  Mismatch base;
  base.backend = opt::backend_name(buffers.backend());
  base.path = graph_path_name(graph.mode());
  base.window = W;
  // Split: the SWA segment, the window part of the step's SWA-only build (its capacities:
  // T_cap - D_cap prefill rows), built once: its columns, its content errors once, the SWA-only
  // word. Every layer's compressed segment is its checked build cut at column W, counting the
  // errors of its own columns: the build's less its window's, those of the segment's inputs at
  // the layer's prefill capacity (the rows a step that does not fit it leaves unbuilt; decode
  // rows' window columns are copies, counting none).
  std::map<Eigen::Index, int64_t> window_errors;  // by prefill capacity: one reference build each
  const auto window_errors_of = [&](const ref::BuilderInputs& layer) {
    const Eigen::Index rows = layer.prefill_topk.rows();
    const auto found = window_errors.find(rows);
    if (found != window_errors.end()) return found->second;
    ref::BuilderInputs window = ref::window_segment_inputs(layer);
    window.prefill_topk = ref::IndexMatrix(rows, 0);
    return window_errors[rows] = ref::build_mixed_sparse_indices(window, sizes).output.content_errors;
  };
  const opt::SplitIndices* first_split = split && schedule.num_layers() > 0 ? &graph.layer_split_indices(0) : nullptr;
  if (first_split != nullptr) {
    const ref::CheckedBuild segment =
        ref::build_mixed_sparse_indices(ref::window_segment_inputs(buffers.reference_inputs(0)), sizes);
    want_errors += segment.output.content_errors;
    kind_checked[static_cast<int>(opt::LayerKind::kSwaOnly)] = true;
    Mismatch where = base;
    where.path += ", SWA segment";
    compare_status(buffers, opt::LayerKind::kSwaOnly, segment.status, valid_step, where, mismatches);
    HostIndices swa = download(buffers.backend(), first_split->swa);
    swa.sparse_lens = segment.output.sparse_lens;  // the segment has none
    // Errors are counted per replay, not per build: compared once, below.
    append(mismatches,
           compare_build(segment.output, swa, segment.output.content_errors, sizes.num_decode_tokens, where));
  }
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    const int32_t ratio = schedule.compress_ratios[static_cast<size_t>(layer)];
    const ref::LayerKind kind = ref::layer_kind_from_ratio(ratio);
    const bool cached = kind != ref::LayerKind::kC4A;
    if (!cached || shared.count(kind) == 0) {
      const ref::BuilderInputs in = buffers.reference_inputs(layer);
      ref::CheckedBuild build = ref::build_mixed_sparse_indices(in, sizes);
      want_errors += build.output.content_errors - (split ? window_errors_of(in) : 0);
      if (!cached) {
        shared.erase(kind);
      }
      shared.emplace(kind, std::move(build));
    }
    const ref::CheckedBuild& want = shared.at(kind);
    Mismatch where = base;
    where.layer = layer;
    where.kind = ref::layer_kind_name(kind);
    // Errors are counted per replay, not per layer: compared once, below.
    if (!split) {
      const HostIndices got = download(buffers.backend(), graph.layer_indices(layer));
      append(mismatches, compare_build(want.output, got, want.output.content_errors, sizes.num_decode_tokens, where));
    } else {
      const opt::SplitIndices& got = graph.layer_split_indices(layer);
      const ref::SplitOutput cut = ref::split_output(want.output, W);
      if (got.swa.sparse_indices != first_split->swa.sparse_indices || got.swa.sparse_lens != nullptr) {
        Mismatch m = where;
        m.what = "buffer identity";
        m.detail = "every layer of a split step shares one SWA segment, without lengths";
        mismatches.push_back(m);
      }
      Mismatch compressed_where = where;
      compressed_where.window = 0;  // columns are j
      append(mismatches,
             compare_build(ref::BuilderOutput{cut.compressed_indices, cut.compressed_lens, 0},
                           download(buffers.backend(), got.compressed), 0, sizes.num_decode_tokens, compressed_where),
             "compressed segment");
    }
    const opt::LayerKind opt_kind = opt::layer_kind_from_ratio(ratio);
    if (!kind_checked[static_cast<int>(opt_kind)]) {
      kind_checked[static_cast<int>(opt_kind)] = true;
      compare_status(buffers, opt_kind, want.status, valid_step, where, mismatches);
    }
  }
  if (valid_step && want_errors != 0) {
    Mismatch m = base;
    m.backend = "reference";
    m.what = "content errors on a valid step";
    m.actual = want_errors;
    mismatches.push_back(m);
  }
  if (errors != want_errors) {
    Mismatch m = base;
    m.what = "content errors";
    m.expected = want_errors;
    m.actual = errors;
    mismatches.push_back(m);
  }
  return mismatches;
}

}  // namespace dsv4::harness
