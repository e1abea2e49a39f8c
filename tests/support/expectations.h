// GoogleTest assertions over the harness's comparisons of builds: exact, and a failure names
// the backend, the token, the column and both values (the caller adds the seed and the layer).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#if defined(DSV4_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "harness/compare_build.h"
#include "harness/differential.h"
#include "harness/staged_request.h"
#include "optimized/backend_buffer.h"
#include "optimized/validation.h"
#include "reference/sharing_modes.h"

namespace dsv4::testing {

inline ::testing::AssertionResult no_mismatch(const std::vector<harness::Mismatch>& found) {
  if (found.empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (const harness::Mismatch& m : found) failure << harness::format_mismatch(m) << "\n";
  return failure;
}

// `request` with SPEC §8 part `part`; a tail build writes into `buffer` (rows W + P_cap wide),
// made here.
inline opt::BuildRequest with_part(opt::BuildRequest request, opt::RowPart part, opt::BackendBuffer& buffer) {
  request.part = part;
  if (part == opt::RowPart::kTail) {
    const int64_t stride = opt::output_width(request);
    const auto rows = static_cast<size_t>(opt::output_rows(request));
    buffer = opt::BackendBuffer(buffer.backend(), (rows * static_cast<size_t>(stride) + rows + 1) * sizeof(int32_t));
    auto* base = static_cast<int32_t*>(buffer.data());
    request.output = opt::OutputView{base, stride, base + rows * static_cast<size_t>(stride)};
  }
  return request;
}

// A differential summary without mismatch; else its full report.
inline ::testing::AssertionResult agrees(const harness::DifferentialSummary& summary) {
  if (summary.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << summary.report();
}

// Fills backend memory with a byte pattern (to catch output elements a build leaves unwritten),
// or writes one int32 into it (to corrupt a cached output on purpose).
inline void fill_bytes(opt::Backend backend, void* p, size_t bytes, unsigned char value) {
  if (bytes == 0) return;
  if (backend == opt::Backend::kHost) {
    std::memset(p, value, bytes);
    return;
  }
#if defined(DSV4_WITH_CUDA)
  // Builds may still run on a non-blocking stream that the legacy-stream memset ignores.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemset(p, value, bytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
#else
  FAIL() << "fill_bytes: no CUDA in this build";
#endif
}
inline void write_int(opt::Backend backend, int32_t* p, int32_t value) {
  if (backend == opt::Backend::kHost) {
    *p = value;
    return;
  }
#if defined(DSV4_WITH_CUDA)
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(p, &value, sizeof value, cudaMemcpyHostToDevice), cudaSuccess);
#else
  FAIL() << "write_int: no CUDA in this build";
#endif
}

// Builds `request`, poisons the output, rebuilds into the same (recycled) memory, so that an
// element the build leaves unwritten shows, and compares with `expected`.
inline ::testing::AssertionResult builds_twice_as(opt::MixedSparseIndicesBuilder& builder,
                                                  const opt::BuildRequest& request,
                                                  const ref::BuilderOutput& expected, int32_t num_decode_tokens) {
  const opt::Backend backend = builder.backend();
  builder.release_outputs();
  (void)builder.take_content_errors();
  const opt::BuiltIndices first = builder.build(request);
  fill_bytes(backend, first.sparse_indices, static_cast<size_t>(first.num_tokens) * first.row_stride * 4, 0x5a);
  fill_bytes(backend, first.sparse_lens, static_cast<size_t>(first.num_tokens) * 4, 0xa5);
  (void)builder.take_content_errors();
  builder.release_outputs();
  const opt::BuiltIndices built = builder.build(request);
  if (built.sparse_indices != first.sparse_indices || built.sparse_lens != first.sparse_lens) {
    return ::testing::AssertionFailure() << "[" << opt::backend_name(backend)
                                         << "] the recycled workspace did not return the same memory";
  }
  const int64_t errors = builder.take_content_errors();
  const harness::HostIndices got = harness::download(backend, built);
  builder.release_outputs();
  harness::Mismatch where;
  where.backend = opt::backend_name(backend);
  where.window = request.window;
  return no_mismatch(harness::compare_build(expected, got, errors, num_decode_tokens, where));
}

// The poison builds_twice_as fills outputs with before the rebuild: what a build leaves there
// where it writes nothing.
inline constexpr int32_t kPoisonedIndex = 0x5a5a5a5a;
inline constexpr int32_t kPoisonedLength = static_cast<int32_t>(0xa5a5a5a5u);

// SPEC §8: what a build of `part` of `in` leaves in outputs poisoned as builds_twice_as poisons
// them: its columns of the reference's rows (cut as reference/sharing_modes.h cuts them) and
// the poison elsewhere, and the content errors of its columns (the window's are those of the
// SWA segment's own build).
inline ref::BuilderOutput part_of_output(const ref::BuilderOutput& whole, int64_t window_errors, int32_t W,
                                        opt::RowPart part) {
  if (part == opt::RowPart::kWhole) return whole;
  const ref::SplitOutput split = ref::split_output(whole, W);
  ref::BuilderOutput out;
  out.content_errors = part == opt::RowPart::kWindow ? window_errors : whole.content_errors - window_errors;
  if (part == opt::RowPart::kCompressed) {
    out.sparse_indices = split.compressed_indices;
    out.sparse_lens = split.compressed_lens;
    return out;
  }
  out.sparse_indices = whole.sparse_indices;
  out.sparse_lens = whole.sparse_lens;
  if (part == opt::RowPart::kWindow) {  // the window columns, no lengths
    out.sparse_indices.rightCols(out.sparse_indices.cols() - W).setConstant(kPoisonedIndex);
    out.sparse_lens.setConstant(kPoisonedLength);
  } else {  // kTail: the compressed columns and the lengths
    out.sparse_indices.leftCols(W).setConstant(kPoisonedIndex);
  }
  return out;
}
inline ref::BuilderOutput reference_part(const ref::BuilderInputs& in, opt::RowPart part) {
  const int64_t window_errors =
      part == opt::RowPart::kWhole ? 0 : ref::build_mixed_sparse_indices(ref::window_segment_inputs(in)).content_errors;
  return part_of_output(ref::build_mixed_sparse_indices(in), window_errors, in.window, part);
}

// Stages `in` in `layout`, validates it as a StepIndexer would and builds it twice
// (builds_twice_as) against `expected` (default: the reference's build of `in`).
inline ::testing::AssertionResult builds_as(opt::MixedSparseIndicesBuilder& builder, const ref::BuilderInputs& in,
                                            const ref::BuilderOutput& expected,
                                            const harness::RequestLayout& layout = {}) {
  harness::StagedRequest staged(builder.backend(), in, layout);
  opt::validate_step_structure(staged.request(), staged.host());
  return builds_twice_as(builder, staged.request(), expected, static_cast<int32_t>(in.decode_swa_indices.rows()));
}
inline ::testing::AssertionResult builds_like_reference(opt::MixedSparseIndicesBuilder& builder,
                                                        const ref::BuilderInputs& in,
                                                        const harness::RequestLayout& layout = {}) {
  return builds_as(builder, in, ref::build_mixed_sparse_indices(in), layout);
}

// SPEC §7 run-time sizes: stages `in` (its buffers capacities) with `sizes`, builds twice (the
// output poisoned in between) and compares the output, the content errors and the status
// word with the reference's checked build.
inline ::testing::AssertionResult checked_build_like_reference(opt::MixedSparseIndicesBuilder& builder,
                                                               const ref::BuilderInputs& in,
                                                               const ref::RunTimeSizes& sizes,
                                                               const harness::RequestLayout& layout = {},
                                                               opt::RowPart part = opt::RowPart::kWhole) {
  const opt::Backend backend = builder.backend();
  const ref::CheckedBuild expected = ref::build_mixed_sparse_indices(in, sizes);
  const int64_t window_errors =
      part == opt::RowPart::kWhole
          ? 0
          : ref::build_mixed_sparse_indices(ref::window_segment_inputs(in), sizes).output.content_errors;
  harness::StagedRequest staged(backend, in, layout, sizes);
  opt::BackendBuffer tail_buffer(backend, 0);
  const opt::BuildRequest request = with_part(staged.request(), part, tail_buffer);
  opt::validate_request_shape(request);
  ::testing::AssertionResult same =
      builds_twice_as(builder, request, part_of_output(expected.output, window_errors, in.window, part),
                      sizes.num_decode_tokens);
  if (!same) return same;
  const opt::MetadataStatus status = staged.status();
  const ref::MetadataStatus& want = expected.status;
  if (status.check != static_cast<int32_t>(want.check) || status.row != want.row || status.value != want.value ||
      status.failures != static_cast<uint32_t>(want.failures) ||
      status.field != static_cast<int32_t>(kernels::metadata_field(static_cast<kernels::MetadataCheck>(status.check)))) {
    return ::testing::AssertionFailure() << "[" << opt::backend_name(backend) << "] status: check " << status.check
                                         << " field " << status.field << " row " << status.row << " value "
                                         << status.value << " failures " << status.failures << "; reference "
                                         << ref::describe(want);
  }
  return ::testing::AssertionSuccess();
}

}  // namespace dsv4::testing
