#include "harness/sharing_check.h"

#include <stdexcept>
#include <string>

#include "harness/compare_build.h"
#include "reference/sharing_modes.h"

namespace dsv4::harness {
namespace {

// Hands mismatches to the caller, each with its token's request and position named.
class Reporter {
 public:
  Reporter(const StepCase& c, const std::function<void(Mismatch)>& record) : c_(c), record_(record) {}
  void operator()(Mismatch m) const {
    if (m.token >= 0 && m.token < c_.step.num_tokens()) {
      m.request = c_.step.token_to_req(m.token);
      m.position = ref::token_position(c_.step, m.token);
    }
    record_(std::move(m));
  }
  void all(const std::vector<Mismatch>& found, const std::string& part = "") const {
    for (Mismatch m : found) {
      if (!part.empty()) m.path += ", " + part;
      (*this)(std::move(m));
    }
  }

 private:
  const StepCase& c_;
  const std::function<void(Mismatch)>& record_;
};

// A build's output against the reference's, the content errors left to the step's total.
std::vector<Mismatch> compare_output(const ref::BuilderOutput& want, const HostIndices& got, const StepCase& c,
                                     const Mismatch& where) {
  return compare_build(want, got, want.content_errors, c.step.num_decode_tokens, where);
}

// Both segments of a split output against the reference's combined output cut at column W.
void compare_split(const ref::BuilderOutput& want, opt::Backend backend, const opt::SplitIndices& got,
                   const StepCase& c, const Mismatch& where, const Reporter& report) {
  const int32_t W = c.schedule.window;
  const ref::SplitOutput split = ref::split_output(want, W);
  const ref::IndexVector no_lens = ref::IndexVector::Zero(split.swa_indices.rows());
  HostIndices swa = download(backend, got.swa);
  if (got.swa.sparse_lens != nullptr) {
    Mismatch m = where;
    m.what = "shape";
    m.detail = "the SWA segment has sparse_lens (it has no lengths)";
    report(m);
  }
  swa.sparse_lens = no_lens;
  report.all(compare_output(ref::BuilderOutput{split.swa_indices, no_lens, 0}, swa, c, where), "SWA segment");
  Mismatch compressed_where = where;
  compressed_where.window = 0;  // columns are j
  report.all(compare_output(ref::BuilderOutput{split.compressed_indices, split.compressed_lens, 0},
                            download(backend, got.compressed), c, compressed_where),
             "compressed segment");
}

std::string path_name(opt::SharingMode mode, bool one_launch) {
  return std::string(opt::sharing_mode_name(mode)) + (one_launch ? ", one launch" : "");
}

template <class Call>
bool throws_logic_error(Call&& call) {
  try {
    call();
  } catch (const std::logic_error&) {
    return true;
  }
  return false;
}

}  // namespace

SharingPathTotals check_sharing_path(opt::SharingMode mode, bool one_launch, const StepCase& c,
                                     const std::vector<ref::BuilderOutput>& want, int64_t window_errors,
                                     const BackendStep& staged, CountingBuilder& builder,
                                     const std::function<void(Mismatch)>& record) {
  const Reporter report(c, record);
  const SharingPlan plan = sharing_plan(c);
  const int32_t layers = c.schedule.num_layers();
  const opt::Backend backend = staged.backend();
  const auto ratio_of = [&c](int32_t l) { return c.schedule.compress_ratios[static_cast<size_t>(l)]; };
  Mismatch base;
  base.backend = opt::backend_name(backend);
  base.path = path_name(mode, one_launch);
  base.window = c.schedule.window;
  const auto at_layer = [&](int32_t l) {
    Mismatch m = base;
    m.layer = l;
    m.kind = ref::layer_kind_name(ref::layer_kind_from_ratio(ratio_of(l)));
    return m;
  };

  const int64_t builds_before = builder.build_calls(), launches_before = builder.launches();
  opt::StepIndexer indexer(builder, staged.inputs(), opt::CacheOptions{}, mode);
  if (one_launch) {
    const bool tail_shape = mode == opt::SharingMode::kTailOnly && plan.first_unsourced_c4a >= 0;
    indexer.build_cacheable_together(c.schedule.compress_ratios, tail_shape ? staged.c4a(plan.first_unsourced_c4a) : nullptr);
  }
  std::vector<opt::BuiltIndices> combined(static_cast<size_t>(layers));  // seed, tail-only
  std::vector<opt::SplitIndices> split(static_cast<size_t>(layers));
  std::vector<opt::TailIndices> tails(static_cast<size_t>(layers));
  for (int32_t l = 0; l < layers; ++l) {
    const auto li = static_cast<size_t>(l);
    switch (mode) {
      case opt::SharingMode::kSeed:
        combined[li] = indexer.layer_indices(ratio_of(l), staged.c4a(l));
        break;
      case opt::SharingMode::kSplit:
        split[li] = indexer.layer_split_indices(ratio_of(l), staged.c4a(l));
        break;
      case opt::SharingMode::kTailOnly:
        // Read at once: the next C4A build of its shape may overwrite it (content_errors()
        // synchronizes the builder's stream first).
        tails[li] = indexer.layer_tail_indices(ratio_of(l), staged.c4a(l));
        (void)indexer.content_errors();
        combined[li] = tails[li].get();
        report.all(compare_output(want[li], download(backend, combined[li]), c, at_layer(l)));
        break;
    }
  }
  SharingPathTotals totals;
  totals.content_errors = indexer.content_errors();
  totals.builds = builder.build_calls() - builds_before;
  totals.launches = builder.launches() - launches_before;

  const ExpectedCalls expected = expected_calls(plan, mode, one_launch, true);
  for (const auto& [counted, wanted, what] : {std::tuple{totals.builds, expected.builds, "builds"},
                                              std::tuple{totals.launches, expected.launches, "launches"}}) {
    if (counted == wanted) continue;
    Mismatch m = base;
    m.what = "builder calls";
    m.expected = wanted;
    m.actual = counted;
    m.detail = std::string("(") + what + " per step, SPEC §8)";
    report(m);
  }
  std::vector<int64_t> layer_errors;
  for (const ref::BuilderOutput& w : want) layer_errors.push_back(w.content_errors);
  const int64_t errors_expected = expected_content_errors(plan, mode, one_launch, true, layer_errors, window_errors);
  if (totals.content_errors != errors_expected) {
    Mismatch m = base;
    m.what = "content errors";
    m.expected = errors_expected;
    m.actual = totals.content_errors;
    m.detail = "(the step's, the SWA segment's counted once)";
    report(m);
  }

  // Read back now: no later layer's build may have overwritten an output still valid.
  for (int32_t l = 0; l < layers; ++l) {
    const auto li = static_cast<size_t>(l);
    if (mode == opt::SharingMode::kSplit) {
      compare_split(want[li], backend, split[li], c, at_layer(l), report);
      continue;
    }
    const bool last_of_buffer = [&] {
      for (int32_t k = l + 1; k < layers; ++k)
        if (plan.tail_buffer[static_cast<size_t>(k)] == plan.tail_buffer[li]) return false;
      return true;
    }();
    if (mode == opt::SharingMode::kTailOnly && plan.tail_buffer[li] >= 0 && !last_of_buffer) {
      if (tails[li].valid() || !throws_logic_error([&] { (void)tails[li].get(); })) {
        Mismatch m = at_layer(l);
        m.what = "lifetime";
        m.detail = "a tail-only output overwritten by a later C4A build of its shape was still handed out";
        report(m);
      }
      continue;
    }
    report.all(compare_output(want[li], download(backend, combined[li]), c, at_layer(l)));
  }

  // Identity: the layers of a group get its first build's buffers, the layers of a tail buffer
  // that buffer, a split step one SWA segment; different groups never share.
  const auto indices_of = [&](size_t l) {
    return mode == opt::SharingMode::kSplit ? split[l].compressed : combined[l];
  };
  std::vector<int32_t> first_of_group(static_cast<size_t>(plan.groups), -1);
  std::vector<int32_t> first_of_buffer(static_cast<size_t>(layers), -1);
  for (int32_t l = 0; l < layers; ++l) {
    const auto li = static_cast<size_t>(l);
    const bool tail = mode == opt::SharingMode::kTailOnly && plan.tail_buffer[li] >= 0;
    int32_t& first = tail ? first_of_buffer[static_cast<size_t>(plan.tail_buffer[li])]
                          : first_of_group[static_cast<size_t>(plan.group[li])];
    if (first < 0) first = l;
    const opt::BuiltIndices a = indices_of(static_cast<size_t>(first)), b = indices_of(li);
    if (a.sparse_indices != b.sparse_indices || a.sparse_lens != b.sparse_lens ||
        (mode == opt::SharingMode::kSplit && split[li].swa.sparse_indices != split[0].swa.sparse_indices)) {
      Mismatch m = at_layer(l);
      m.what = "buffer identity";
      m.detail = "layer " + std::to_string(first) + " and this one share a build (SPEC §8) but got other buffers";
      report(m);
    }
    if (first == l && c.step.num_tokens() > 0) {
      for (int32_t k = 0; k < l; ++k) {
        if (indices_of(static_cast<size_t>(k)).sparse_lens == b.sparse_lens &&
            plan.group[static_cast<size_t>(k)] != plan.group[li] &&
            !(tail && plan.tail_buffer[static_cast<size_t>(k)] == plan.tail_buffer[li])) {
          Mismatch m = at_layer(l);
          m.what = "buffer identity";
          m.detail = "layer " + std::to_string(k) + " has other inputs but the same buffers";
          report(m);
          break;
        }
      }
    }
  }

  indexer.end_step();
  for (int32_t l = 0; l < layers; ++l) {
    const opt::TailIndices& t = tails[static_cast<size_t>(l)];
    if (mode == opt::SharingMode::kTailOnly && (t.valid() || !throws_logic_error([&] { (void)t.get(); }))) {
      Mismatch m = at_layer(l);
      m.what = "use after end_step";
      m.detail = "a tail-only handle still answered after end_step()";
      report(m);
    }
  }
  if (layers > 0 && !throws_logic_error([&] {
        switch (mode) {
          case opt::SharingMode::kSeed:
            return (void)indexer.layer_indices(ratio_of(0), staged.c4a(0));
          case opt::SharingMode::kSplit:
            return (void)indexer.layer_split_indices(ratio_of(0), staged.c4a(0));
          case opt::SharingMode::kTailOnly:
            return (void)indexer.layer_tail_indices(ratio_of(0), staged.c4a(0));
        }
      })) {
    Mismatch m = base;
    m.what = "use after end_step";
    m.detail = "a layer call after end_step() did not throw std::logic_error";
    report(m);
  }
  return totals;
}

}  // namespace dsv4::harness
