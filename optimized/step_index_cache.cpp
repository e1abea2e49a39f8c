#include "optimized/step_index_cache.h"

#include <sstream>
#include <stdexcept>
#include <vector>

#include "optimized/backend_buffer.h"

namespace dsv4::opt {
namespace {

// A build's indices on the host, num_tokens x width dense (rows may sit row_stride apart).
std::vector<int32_t> host_indices(Backend backend, const BuiltIndices& built) {
  const auto width = static_cast<size_t>(built.width);
  std::vector<int32_t> host(static_cast<size_t>(built.num_tokens) * width);
  if (built.row_stride == built.width) {
    copy_to_host(backend, host.data(), built.sparse_indices, host.size() * sizeof(int32_t));
    return host;
  }
  for (int32_t t = 0; t < built.num_tokens; ++t) {
    copy_to_host(backend, host.data() + static_cast<size_t>(t) * width, built.sparse_indices + t * built.row_stride,
                 width * sizeof(int32_t));
  }
  return host;
}

}  // namespace

bool CacheKey::operator==(const CacheKey& o) const {
  return kind == o.kind && num_tokens == o.num_tokens && num_decode_tokens == o.num_decode_tokens &&
         num_requests == o.num_requests && window == o.window && ratio == o.ratio &&
         topk == o.topk && decode_width == o.decode_width && prefill_width == o.prefill_width &&
         decode_local == o.decode_local && has_decode_lens == o.has_decode_lens &&
         has_decode_valid == o.has_decode_valid && swa_block_size == o.swa_block_size &&
         swa_blocks_per_row == o.swa_blocks_per_row &&
         compressed_block_size == o.compressed_block_size &&
         compressed_blocks_per_row == o.compressed_blocks_per_row && swa_table == o.swa_table &&
         compressed_table == o.compressed_table && row_capacity == o.row_capacity &&
         compressed_capacity == o.compressed_capacity && output == o.output &&
         run_time_sizes == o.run_time_sizes && status == o.status && part == o.part &&
         index_source == o.index_source;
}

CacheKey cache_key(LayerKind kind, const BuildRequest& r, int32_t index_source) {
  CacheKey key;
  key.kind = kind;
  key.num_tokens = r.num_tokens;
  key.num_decode_tokens = r.num_decode_tokens;
  key.num_requests = r.num_requests;
  key.window = r.window;
  key.ratio = r.ratio;
  key.topk = r.topk;
  key.decode_width = r.decode_compressed.cols;
  key.prefill_width = r.prefill_topk.cols;
  key.decode_local = r.decode_local;
  key.has_decode_lens = r.decode_compressed_lens != nullptr;
  key.has_decode_valid = r.decode_valid != nullptr;
  key.swa_block_size = r.swa.block_size;
  key.swa_blocks_per_row = r.swa.blocks_per_row;
  key.compressed_block_size = r.compressed.block_size;
  key.compressed_blocks_per_row = r.compressed.blocks_per_row;
  key.swa_table = CacheKey::TableAddressing{r.swa.row_stride, r.swa.block_span, r.swa.base_offset};
  key.compressed_table = CacheKey::TableAddressing{r.compressed.row_stride, r.compressed.block_span, r.compressed.base_offset};
  key.row_capacity = r.row_capacity;
  key.compressed_capacity = r.compressed_capacity;
  key.output = r.output.sparse_indices;
  key.run_time_sizes = r.run_time_sizes;
  key.status = r.status;
  key.part = r.part;
  key.index_source = index_source < 0 ? -1 : index_source;
  return key;
}

StepIndexCache::StepIndexCache(MixedSparseIndicesBuilder& builder, CacheOptions options)
    : builder_(builder), options_(options) {
  entries_.reserve(8);  // SWA-only + C128A, a few variants: no allocation on the hit path
}

StepIndexCache::~StepIndexCache() {
  try {
    end_step();
  } catch (...) {
    // A destructor must not throw; release_outputs of the shipped builders never does.
  }
}

void StepIndexCache::throw_if_ended(LayerKind kind) const {
  if (ended_) {
    throw std::logic_error(std::string("StepIndexCache: ") + layer_kind_name(kind) +
                           " layer requested after end_step(); the step's outputs are released");
  }
}

const StepIndexCache::Entry* StepIndexCache::find(const CacheKey& key) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

BuildRequest StepIndexCache::with_token_plan(const BuildRequest& request, bool may_write) const {
  BuildRequest r = request;
  const bool plannable = options_.share_token_plan && r.run_time_sizes == nullptr && r.token_plan == nullptr &&
                         !r.write_token_plan && r.num_tokens > r.num_decode_tokens;
  if (!plannable) return r;
  if (plan_.entries == nullptr) {
    r.write_token_plan = may_write && r.output.sparse_indices == nullptr;  // into the workspace
  } else if (plan_.query_start_loc == r.query_start_loc && plan_.seq_lens == r.seq_lens &&
             plan_.token_to_req == r.token_to_req && plan_.num_tokens == r.num_tokens &&
             plan_.num_decode_tokens == r.num_decode_tokens) {
    r.token_plan = plan_.entries;
  }
  return r;
}

void StepIndexCache::remember_token_plan(const BuildRequest& sent, const BuiltIndices& built) {
  if (!sent.write_token_plan || plan_.entries != nullptr || built.token_plan == nullptr) return;
  plan_ = TokenPlan{built.token_plan, sent.query_start_loc, sent.seq_lens, sent.token_to_req, sent.num_tokens,
                    sent.num_decode_tokens};
}

BuiltIndices StepIndexCache::build(const BuildRequest& request) {
  const BuildRequest sent = with_token_plan(request, true);
  const BuiltIndices built = builder_.build(sent);
  remember_token_plan(sent, built);
  return built;
}

BuiltIndices StepIndexCache::get_or_build(LayerKind kind, const BuildRequest& request, int32_t index_source) {
  throw_if_ended(kind);
  if (!options_.enabled || !is_cacheable(kind, index_source)) {
    const BuiltIndices built = build(request);
    ++builder_calls_;
    ++launches_;
    return built;
  }
  const CacheKey key = cache_key(kind, request, index_source);
  if (const Entry* entry = find(key)) {
    ++hits_;
    if (options_.verify_on_hit) verify_hit(*entry, request);
    return entry->built;
  }
  const BuiltIndices built = build(request);
  ++builder_calls_;
  ++launches_;
  entries_.push_back(Entry{key, request, built});
  return built;
}

void StepIndexCache::build_together(const LayerBuild* builds, int count, BuiltIndices* out) {
  if (!options_.enabled) {
    throw std::logic_error("StepIndexCache::build_together: the cache is disabled, nothing is shared");
  }
  if (count > kMaxBuildsTogether) {
    throw std::invalid_argument("StepIndexCache::build_together: " + std::to_string(count) + " builds, at most " +
                                std::to_string(kMaxBuildsTogether));
  }
  // What is built: every build whose key is neither cached nor earlier in `builds`.
  BuildRequest requests[kMaxBuildsTogether];
  BuiltIndices built[kMaxBuildsTogether];
  int built_as[kMaxBuildsTogether];  // per build: its index in `requests`, or -1 (a hit)
  int fresh = 0;
  for (int i = 0; i < count; ++i) {
    const LayerBuild& b = builds[i];
    throw_if_ended(b.kind);
    built_as[i] = -1;
    if (is_cacheable(b.kind, b.index_source)) {
      const CacheKey key = cache_key(b.kind, b.request, b.index_source);
      if (find(key) != nullptr) continue;
      for (int j = 0; j < i && built_as[i] < 0; ++j) {
        if (built_as[j] >= 0 && is_cacheable(builds[j].kind, builds[j].index_source) &&
            cache_key(builds[j].kind, builds[j].request, builds[j].index_source) == key) {
          built_as[i] = built_as[j];
        }
      }
      if (built_as[i] >= 0) continue;
    }
    built_as[i] = fresh;
    // One call's builds run at once: only the first may write the plan, none reads it then.
    requests[fresh] = with_token_plan(b.request, fresh == 0);
    ++fresh;
  }
  if (fresh > 0) {
    builder_.build_together(requests, fresh, built);
    remember_token_plan(requests[0], built[0]);
    builder_calls_ += fresh;
    ++launches_;
  }
  for (int i = 0; i < count; ++i) {
    const LayerBuild& b = builds[i];
    const bool cacheable = is_cacheable(b.kind, b.index_source);
    if (built_as[i] < 0) {
      out[i] = find(cache_key(b.kind, b.request, b.index_source))->built;
      ++hits_;
      continue;
    }
    out[i] = built[built_as[i]];
    const CacheKey key = cache_key(b.kind, b.request, b.index_source);
    if (cacheable && find(key) == nullptr) entries_.push_back(Entry{key, b.request, out[i]});
  }
}

void StepIndexCache::end_step() {
  if (ended_) return;
  ended_ = true;
  entries_.clear();
  plan_ = TokenPlan{};
  builder_.release_outputs();
}

int64_t StepIndexCache::take_content_errors() {
  const int64_t errors = counted_errors_ + builder_.take_content_errors();
  counted_errors_ = 0;
  return errors;
}

void StepIndexCache::verify_hit(const Entry& entry, const BuildRequest& request) {
  counted_errors_ += builder_.take_content_errors();  // keep what real builds counted
  BuildRequest in_workspace = request;  // never over the caller-owned outputs it checks
  in_workspace.output = OutputView{};
  in_workspace.status = nullptr;
  const BuiltIndices rebuilt = builder_.build(in_workspace);
  (void)builder_.take_content_errors();  // the rebuild's errors were counted at the first build
  const BuiltIndices& cached = entry.built;
  const char* kind = layer_kind_name(entry.key.kind);
  auto fail = [&](const std::string& where, int64_t cached_value, int64_t rebuilt_value) {
    std::ostringstream message;
    message << "StepIndexCache verify_on_hit: " << kind << " layer: cached output differs from a rebuild at "
            << where << ": cached " << cached_value << ", rebuilt " << rebuilt_value;
    throw std::logic_error(message.str());
  };
  if (rebuilt.num_tokens != cached.num_tokens) fail("num_tokens", cached.num_tokens, rebuilt.num_tokens);
  if (rebuilt.width != cached.width) fail("width", cached.width, rebuilt.width);
  if (request.part == RowPart::kWindow) {  // only the window columns, no lengths: compared here
    std::vector<int32_t> cached_row(static_cast<size_t>(request.window)), rebuilt_row(cached_row.size());
    for (int32_t t = 0; t < cached.num_tokens; ++t) {
      copy_to_host(builder_.backend(), cached_row.data(), cached.sparse_indices + t * cached.row_stride,
                   cached_row.size() * sizeof(int32_t));
      copy_to_host(builder_.backend(), rebuilt_row.data(), rebuilt.sparse_indices + t * rebuilt.row_stride,
                   rebuilt_row.size() * sizeof(int32_t));
      for (size_t c = 0; c < cached_row.size(); ++c) {
        if (cached_row[c] != rebuilt_row[c]) {
          fail("token " + std::to_string(t) + ", column " + std::to_string(c), cached_row[c], rebuilt_row[c]);
        }
      }
    }
    return;
  }

  const size_t width = static_cast<size_t>(cached.width);
  const std::vector<int32_t> cached_host = host_indices(builder_.backend(), cached);
  std::vector<int32_t> rebuilt_host = host_indices(builder_.backend(), rebuilt);
  for (size_t i = 0; i < cached_host.size(); ++i) {
    if (cached_host[i] != rebuilt_host[i]) {
      fail("token " + std::to_string(i / width) + ", column " + std::to_string(i % width),
           cached_host[i], rebuilt_host[i]);
    }
  }
  const Backend backend = builder_.backend();
  const size_t tokens = static_cast<size_t>(cached.num_tokens);
  std::vector<int32_t> cached_lens(tokens), rebuilt_lens(tokens);
  copy_to_host(backend, cached_lens.data(), cached.sparse_lens, tokens * sizeof(int32_t));
  copy_to_host(backend, rebuilt_lens.data(), rebuilt.sparse_lens, tokens * sizeof(int32_t));
  for (size_t t = 0; t < tokens; ++t) {
    if (cached_lens[t] != rebuilt_lens[t]) {
      fail("token " + std::to_string(t) + ", column sparse_lens", cached_lens[t], rebuilt_lens[t]);
    }
  }
}

}  // namespace dsv4::opt
