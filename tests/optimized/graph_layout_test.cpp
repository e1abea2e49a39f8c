// The rewrites of a recorded step graph (optimized/graph_layout.h) on captured chains of memset
// nodes, and the status check's kernel found among a capture's nodes. Capturing needs a device
// (nothing runs): the suites start with "Cuda" (CTest label `gpu`).
#include <gtest/gtest.h>

#if defined(DSV4_WITH_CUDA)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "kernels/mixed_sparse_indices_launch.h"
#include "optimized/cuda_builder.h"
#include "optimized/graph_layout.h"

namespace dsv4::testing {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

// A graph captured from `nodes` memsets on one stream (a chain: each waits for the one before),
// node k writing byte k of a device buffer, so that a node's position is read from its params.
class CapturedChain {
 public:
  explicit CapturedChain(int nodes) {
    if (cudaMalloc(&bytes_, 64) != cudaSuccess || cudaStreamCreate(&stream_) != cudaSuccess) return;
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return;
    for (int k = 0; k < nodes; ++k) (void)cudaMemsetAsync(static_cast<char*>(bytes_) + k, k, 1, stream_);
    (void)cudaStreamEndCapture(stream_, &graph_);
  }
  ~CapturedChain() {
    if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    if (bytes_ != nullptr) (void)cudaFree(bytes_);
  }
  CapturedChain(const CapturedChain&) = delete;
  CapturedChain& operator=(const CapturedChain&) = delete;
  cudaGraph_t graph() const { return graph_; }

  // Node position (its memset's byte) of a node of this graph.
  int position(cudaGraphNode_t node) const {
    cudaMemsetParams p{};
    if (cudaGraphMemsetNodeGetParams(node, &p) != cudaSuccess) return -1;
    return static_cast<int>(static_cast<char*>(p.dst) - static_cast<char*>(bytes_));
  }
  // The graph's edges as (from, to) positions, sorted.
  std::vector<std::pair<int, int>> edges() const {
    size_t count = 0;
    if (cudaGraphGetEdges(graph_, nullptr, nullptr, nullptr, &count) != cudaSuccess) return {{-1, -1}};
    std::vector<cudaGraphNode_t> from(count), to(count);
    std::vector<cudaGraphEdgeData> data(count);
    if (count > 0 && cudaGraphGetEdges(graph_, from.data(), to.data(), data.data(), &count) != cudaSuccess) return {{-1, -1}};
    std::vector<std::pair<int, int>> out;
    for (size_t e = 0; e < count; ++e) out.emplace_back(position(from[e]), position(to[e]));
    std::sort(out.begin(), out.end());
    return out;
  }
  size_t node_count() const {
    size_t count = 0;
    return cudaGraphGetNodes(graph_, nullptr, &count) == cudaSuccess ? count : 0;
  }
  // Takes the nodes at `positions` off the chain.
  cudaError_t take_off(std::set<int> positions) const {
    return opt::take_off_chain(graph_, [this, positions](cudaGraphNode_t n) { return positions.count(position(n)) > 0; });
  }

 private:
  void* bytes_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
};

using Edges = std::vector<std::pair<int, int>>;

TEST(CudaGraphLayout, NodesTakenOffTheChainLeaveTheRestLinkedInOrder) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  CapturedChain chain(7);
  ASSERT_NE(chain.graph(), nullptr);
  ASSERT_EQ(chain.edges(), (Edges{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}}));
  // The head, two in a row inside, and the tail.
  ASSERT_CUDA(chain.take_off({0, 2, 3, 6}));
  EXPECT_EQ(chain.edges(), (Edges{{1, 4}, {4, 5}}));
  EXPECT_EQ(chain.node_count(), 7u);  // taken off, not removed: they still run
  // The graph still instantiates (and the nodes taken off are roots and leaves of their own).
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, chain.graph(), 0));
  ASSERT_CUDA(cudaGraphExecDestroy(exec));
}

TEST(CudaGraphLayout, TakingNothingOffOrEverythingOff) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  CapturedChain none(4);
  ASSERT_CUDA(none.take_off({}));
  EXPECT_EQ(none.edges(), (Edges{{0, 1}, {1, 2}, {2, 3}}));
  CapturedChain all(3);
  ASSERT_CUDA(all.take_off({0, 1, 2}));
  EXPECT_EQ(all.edges(), Edges{});
  CapturedChain one(1);  // no edge at all
  ASSERT_CUDA(one.take_off({0}));
  EXPECT_EQ(one.edges(), Edges{});
}

TEST(CudaGraphLayout, ChainsCutIntoRunsOfConsecutiveNodesAfterNodesTakenOff) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  CapturedChain chain(8);
  ASSERT_CUDA(chain.take_off({0, 5}));  // chain 1 2 3 4 6 7
  ASSERT_CUDA(opt::cut_into_chains(chain.graph(), 3));  // runs of 2
  EXPECT_EQ(chain.edges(), (Edges{{1, 2}, {3, 4}, {6, 7}}));
  CapturedChain more(3);
  ASSERT_CUDA(opt::cut_into_chains(more.graph(), 10));  // more chains than nodes: one each
  EXPECT_EQ(more.edges(), Edges{});
  CapturedChain single(3);
  ASSERT_CUDA(opt::cut_into_chains(single.graph(), 1));
  EXPECT_EQ(single.edges(), (Edges{{0, 1}, {1, 2}}));
}

TEST(CudaGraphLayout, AGraphThatIsNotOneChainIsRefusedUnchanged) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  CapturedChain chain(4);
  ASSERT_CUDA(opt::cut_into_chains(chain.graph(), 2));  // two chains: 0 1 and 2 3
  const Edges two = chain.edges();
  ASSERT_EQ(two, (Edges{{0, 1}, {2, 3}}));
  EXPECT_EQ(chain.take_off({1}), cudaErrorInvalidValue);
  EXPECT_EQ(opt::cut_into_chains(chain.graph(), 2), cudaErrorInvalidValue);
  EXPECT_EQ(chain.edges(), two);
}

// The node a status check's launch records is the one launches_kernel finds by
// metadata_check_kernel_entry (the step graph takes those off its chains), and a memset is not.
TEST(CudaGraphLayout, TheStatusCheckKernelIsFoundAmongACapturesNodes) {
  if (!opt::cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  void* memory = nullptr;
  ASSERT_CUDA(cudaMalloc(&memory, 4096));
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&stream));
  kernels::MixedSparseIndicesArgs args{};
  args.run_time_sizes = static_cast<const kernels::StepSizes*>(memory);  // captured, never run
  kernels::MixedSparseIndicesLaunchConfig config{};
  config.programmatic_launch = true;
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  ASSERT_CUDA(cudaMemsetAsync(memory, 0, 16, stream));
  const kernels::KernelStatus launched = kernels::launch_metadata_check(
      args, reinterpret_cast<kernels::MetadataStatus*>(static_cast<char*>(memory) + 1024), config, stream);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(launched.ok());
  size_t count = 0;
  ASSERT_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  ASSERT_EQ(count, 2u);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  int checks = 0;
  for (cudaGraphNode_t n : nodes) checks += opt::launches_kernel(n, kernels::metadata_check_kernel_entry());
  EXPECT_EQ(checks, 1);
  ASSERT_CUDA(cudaGraphDestroy(graph));
  ASSERT_CUDA(cudaStreamDestroy(stream));
  ASSERT_CUDA(cudaFree(memory));
}

}  // namespace
}  // namespace dsv4::testing
#endif
