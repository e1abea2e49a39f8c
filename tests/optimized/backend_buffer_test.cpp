// BackendBuffer and copy_to_host, on every backend: what the harness and the benchmarks stage
// inputs with; and the names of the backends and layer kinds.
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "optimized/backend_buffer.h"
#include "optimized/layer_kind.h"
#include "support/backend_test.h"

namespace dsv4::testing {
namespace {

using opt::BackendBuffer;

using BackendBufferTest = BackendTest;
DSV4_ON_EVERY_BACKEND(BackendBufferTest);

std::vector<int32_t> read_back(opt::Backend backend, const BackendBuffer& b) {
  std::vector<int32_t> host(b.bytes() / sizeof(int32_t));
  opt::copy_to_host(backend, host.data(), b.data(), b.bytes());
  return host;
}

TEST_P(BackendBufferTest, UploadsCopiesBackAndMoves) {
  const std::vector<int32_t> values{3, -1, 7, 1 << 30};
  BackendBuffer a = BackendBuffer::upload(backend(), values);
  EXPECT_EQ(a.backend(), backend());
  EXPECT_EQ(a.bytes(), values.size() * sizeof(int32_t));
  EXPECT_EQ(read_back(backend(), a), values);

  const void* data = a.data();
  BackendBuffer b(std::move(a));  // the data moves, the pointer stays
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  BackendBuffer c = BackendBuffer::upload(backend(), std::vector<int32_t>{9});
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(read_back(backend(), c), values);
}

TEST_P(BackendBufferTest, RefusesMoreBytesThanItHoldsAndCopiesNothingForZero) {
  BackendBuffer b(backend(), 8);
  const std::vector<int32_t> three{1, 2, 3};
  EXPECT_THROW(b.copy_from_host(three.data(), 12), std::invalid_argument);
  EXPECT_NO_THROW(b.copy_from_host(nullptr, 0));
  EXPECT_NO_THROW(opt::copy_to_host(backend(), nullptr, b.data(), 0));
  const BackendBuffer empty(backend(), 0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(BackendBuffer().data(), nullptr);
}

TEST(BackendAndLayerKindNames, NameEveryValueAndNoOther) {
  EXPECT_STREQ(opt::backend_name(opt::Backend::kHost), "host");
  EXPECT_STREQ(opt::backend_name(opt::Backend::kCuda), "cuda");
  EXPECT_STREQ(opt::backend_name(static_cast<opt::Backend>(7)), "unknown");
  EXPECT_STREQ(opt::layer_kind_name(static_cast<opt::LayerKind>(7)), "unknown");
}

}  // namespace
}  // namespace dsv4::testing
