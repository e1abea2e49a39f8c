#include "optimized/graph_layout.h"

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dsv4::opt {
namespace {

// The chain's nodes in order and the edge out of each but the last (edge k: node k -> k + 1).
struct Chain {
  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaGraphEdgeData> edges;
};

// The graph's edges as one chain (nodes without edges are not part of it); an empty chain for a
// graph without edges; cudaErrorInvalidValue when the edges form anything else.
cudaError_t read_chain(cudaGraph_t graph, Chain* chain) {
  chain->nodes.clear();
  chain->edges.clear();
  size_t count = 0;
  cudaError_t status = cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count);
  if (status != cudaSuccess || count == 0) return status;
  std::vector<cudaGraphNode_t> from(count), to(count);
  std::vector<cudaGraphEdgeData> data(count);
  status = cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count);
  if (status != cudaSuccess) return status;
  std::unordered_map<cudaGraphNode_t, size_t> edge_from;
  const std::unordered_set<cudaGraphNode_t> has_parent(to.begin(), to.end());
  if (has_parent.size() != count) return cudaErrorInvalidValue;  // a node with two parents
  for (size_t e = 0; e < count; ++e) {
    if (!edge_from.emplace(from[e], e).second) return cudaErrorInvalidValue;  // two children
  }
  cudaGraphNode_t node = nullptr;
  for (size_t e = 0; e < count && node == nullptr; ++e) {
    if (has_parent.count(from[e]) == 0) node = from[e];
  }
  if (node == nullptr) return cudaErrorInvalidValue;  // a cycle
  chain->nodes.push_back(node);
  for (auto it = edge_from.find(node); it != edge_from.end(); it = edge_from.find(to[it->second])) {
    if (chain->edges.size() == count) return cudaErrorInvalidValue;  // a cycle
    chain->edges.push_back(data[it->second]);
    chain->nodes.push_back(to[it->second]);
  }
  return chain->edges.size() == count ? cudaSuccess : cudaErrorInvalidValue;  // else: two chains
}

struct Edges {
  std::vector<cudaGraphNode_t> from, to;
  std::vector<cudaGraphEdgeData> data;
  void add(cudaGraphNode_t f, cudaGraphNode_t t, const cudaGraphEdgeData& d) {
    from.push_back(f);
    to.push_back(t);
    data.push_back(d);
  }
  cudaError_t remove_from(cudaGraph_t graph) const {
    return from.empty() ? cudaSuccess : cudaGraphRemoveDependencies(graph, from.data(), to.data(), data.data(), from.size());
  }
  cudaError_t add_to(cudaGraph_t graph) const {
    return from.empty() ? cudaSuccess : cudaGraphAddDependencies(graph, from.data(), to.data(), data.data(), from.size());
  }
};

}  // namespace

cudaError_t take_off_chain(cudaGraph_t graph, const std::function<bool(cudaGraphNode_t)>& off_chain) {
  Chain chain;
  const cudaError_t status = read_chain(graph, &chain);
  if (status != cudaSuccess) return status;
  std::vector<bool> off(chain.nodes.size());
  for (size_t k = 0; k < chain.nodes.size(); ++k) off[k] = off_chain(chain.nodes[k]);
  Edges removed, added;
  constexpr size_t kNone = SIZE_MAX;
  size_t kept = kNone;  // the last node kept so far
  for (size_t k = 0; k < chain.nodes.size(); ++k) {
    if (off[k]) {  // its edges, each once (two nodes off in a row share one)
      if (k > 0 && !off[k - 1]) removed.add(chain.nodes[k - 1], chain.nodes[k], chain.edges[k - 1]);
      if (k + 1 < chain.nodes.size()) removed.add(chain.nodes[k], chain.nodes[k + 1], chain.edges[k]);
      continue;
    }
    // Kept after nodes taken off: linked to the last kept node by the edge that left it.
    if (kept != kNone && kept + 1 != k) added.add(chain.nodes[kept], chain.nodes[k], chain.edges[kept]);
    kept = k;
  }
  const cudaError_t cut = removed.remove_from(graph);
  return cut != cudaSuccess ? cut : added.add_to(graph);
}

cudaError_t cut_into_chains(cudaGraph_t graph, int chains) {
  Chain chain;
  const cudaError_t status = read_chain(graph, &chain);
  if (status != cudaSuccess || chain.nodes.empty() || chains <= 1) return status;
  const size_t per_chain = (chain.nodes.size() + static_cast<size_t>(chains) - 1) / static_cast<size_t>(chains);
  Edges cut;
  for (size_t k = per_chain; k < chain.nodes.size(); k += per_chain) {  // node k starts a new chain
    cut.add(chain.nodes[k - 1], chain.nodes[k], chain.edges[k - 1]);
  }
  return cut.remove_from(graph);
}

bool launches_kernel(cudaGraphNode_t node, const void* kernel) {
  cudaGraphNodeType type{};
  if (cudaGraphNodeGetType(node, &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) return false;
  cudaKernelNodeParams params{};
  return cudaGraphKernelNodeGetParams(node, &params) == cudaSuccess && params.func == kernel;
}

}  // namespace dsv4::opt
