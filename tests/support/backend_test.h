// Behaviour tests of the optimized path run once per backend, as Highway runs one test body
// per target: a TEST_P on a fixture derived from BackendTest, instantiated by
// DSV4_ON_EVERY_BACKEND(Suite) as Host/Suite.Test/host and Cuda/Suite.Test/cuda. CTest labels
// every test whose name starts with "Cuda" `gpu` (ctest -L gpu); without a device the CUDA
// instance skips visibly (GTEST_SKIP).
#pragma once
#include <gtest/gtest.h>

#include <memory>

#if defined(DSV4_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "harness/differential.h"
#include "optimized/builder.h"
#include "optimized/cuda_builder.h"
#include "optimized/host_builder.h"

namespace dsv4::testing {

class BackendTest : public ::testing::TestWithParam<opt::Backend> {
 protected:
  void SetUp() override {
    if (backend() == opt::Backend::kCuda && !opt::cuda_device_present()) {
      GTEST_SKIP() << "no CUDA device";
    }
  }
  void TearDown() override {
    builder_.reset();
#if defined(DSV4_WITH_CUDA)
    if (stream_ != nullptr) {
      EXPECT_EQ(cudaStreamDestroy(static_cast<cudaStream_t>(stream_)), cudaSuccess);
    }
#endif
  }

  opt::Backend backend() const { return GetParam(); }

  // This test's builder: CUDA on a non-blocking stream of its own, so that nothing relies on
  // the legacy stream's ordering.
  opt::MixedSparseIndicesBuilder& builder() {
    if (!builder_) builder_ = make_builder();
    return *builder_;
  }
  std::unique_ptr<opt::MixedSparseIndicesBuilder> make_builder() {
    if (backend() == opt::Backend::kHost) return opt::make_host_builder();
#if defined(DSV4_WITH_CUDA)
    if (stream_ == nullptr) {
      cudaStream_t stream = nullptr;
      EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
      stream_ = stream;
    }
#endif
    return opt::make_cuda_builder(stream_);
  }

  // The differential check on this backend only.
  harness::DifferentialOptions on_this_backend() const {
    harness::DifferentialOptions options;
    options.backends = {backend()};
    return options;
  }

 private:
  void* stream_ = nullptr;
  std::unique_ptr<opt::MixedSparseIndicesBuilder> builder_;
};

inline std::string backend_param_name(const ::testing::TestParamInfo<opt::Backend>& info) {
  return opt::backend_name(info.param);
}

}  // namespace dsv4::testing

#define DSV4_ON_EVERY_BACKEND(Suite)                                                                    \
  INSTANTIATE_TEST_SUITE_P(Host, Suite, ::testing::Values(::dsv4::opt::Backend::kHost),                  \
                           ::dsv4::testing::backend_param_name);                                          \
  INSTANTIATE_TEST_SUITE_P(Cuda, Suite, ::testing::Values(::dsv4::opt::Backend::kCuda),                  \
                           ::dsv4::testing::backend_param_name)
