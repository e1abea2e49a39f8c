// The layout of a recorded step graph (CUDA). A stream capture records the builds as one chain
// of nodes, each depending on the one before (by stream order, or programmatically with PDL);
// these rewrite that chain before it is instantiated.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace dsv4::opt {

// Takes every node `off_chain` selects out of the chain: its parent then leads to its child
// directly (with the edge that led to the node), and the node is left with no edge at all, so
// that it runs from the graph's start beside the chain and nothing waits for it but the graph's
// end. For work nothing in the graph reads (the status checks: the builds skip the rows those
// checks break on their own). A graph that is not one chain (plus isolated nodes) is refused:
// cudaErrorInvalidValue, the graph unchanged.
cudaError_t take_off_chain(cudaGraph_t graph, const std::function<bool(cudaGraphNode_t)>& off_chain);

// Cuts the chain into `chains` runs of consecutive nodes, each a branch of its own (the builds
// are independent). Every branch costs the graph launch about 1 us of host time (H200: 23
// branches 27 us, 1 branch 2.3 us), so a few long branches beat one per build. Isolated nodes
// stay as they are; a graph that is not one chain (plus isolated nodes) is refused as above.
cudaError_t cut_into_chains(cudaGraph_t graph, int chains);

// Whether `node` is a kernel node launching `kernel` (the host-side address the launch used).
bool launches_kernel(cudaGraphNode_t node, const void* kernel);

}  // namespace dsv4::opt
