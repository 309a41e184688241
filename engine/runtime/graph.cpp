#include "engine/runtime/graph.hpp"

#include <fmt/format.h>

#include "engine/runtime/driver.hpp"

namespace kiln::runtime {
namespace {

CUDA_KERNEL_NODE_PARAMS node_params(const GraphLaunch& l) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = l.function;
  p.gridDimX = l.config.grid[0];
  p.gridDimY = l.config.grid[1];
  p.gridDimZ = l.config.grid[2];
  p.blockDimX = l.config.block[0];
  p.blockDimY = l.config.block[1];
  p.blockDimZ = l.config.block[2];
  p.sharedMemBytes = l.config.shared;
  p.kernelParams = l.params;
  return p;
}

}  // namespace

void GraphDeleter::operator()(CUgraph g) const { driver().cuGraphDestroy(g); }
void GraphExecDeleter::operator()(CUgraphExec g) const { driver().cuGraphExecDestroy(g); }

KernelGraph::KernelGraph(const std::vector<GraphLaunch>& launches) {
  const Driver& d = driver();
  CUgraph g = nullptr;
  KILN_CU_CHECK(d.cuGraphCreate(&g, 0), "a plan's CUDA graph");
  graph_.reset(g);
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const CUDA_KERNEL_NODE_PARAMS p = node_params(launches[i]);
    CUgraphNode node = nullptr;
    // A kernel that waits for the one before it itself (LaunchConfig::programmatic, beside)
    // hangs from it by a programmatic edge: it may start while that one runs.
    const LaunchConfig& ci = launches[i].config;
    const bool early = (ci.programmatic || ci.beside) && !nodes_.empty();
    const bool after = !nodes_.empty() && !early;  // an ordinary edge from the one before
    KILN_CU_CHECK(
        d.cuGraphAddKernelNode(&node, g, after ? &nodes_.back() : nullptr, after ? 1 : 0, &p),
        fmt::format("kernel {} of a plan's CUDA graph", i));
    if (early) {
      CUgraphEdgeData edge{};
      edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      KILN_CU_CHECK(d.cuGraphAddDependencies_v2(g, &nodes_.back(), &node, &edge, 1),
                    fmt::format("kernel {} of a plan's CUDA graph", i));
    }
    if (const LaunchConfig& c = launches[i].config; c.clustered()) {
      CUlaunchAttributeValue dims{};
      dims.clusterDim.x = c.cluster[0];
      dims.clusterDim.y = c.cluster[1];
      dims.clusterDim.z = c.cluster[2];
      KILN_CU_CHECK(
          d.cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &dims),
          fmt::format("kernel {} of a plan's CUDA graph", i));
    }
    if (launches[i].config.cooperative) {
      CUlaunchAttributeValue on{};
      on.cooperative = 1;
      KILN_CU_CHECK(d.cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &on),
                    fmt::format("kernel {} of a plan's CUDA graph", i));
    }
    nodes_.push_back(node);
  }
  CUgraphExec exec = nullptr;
  KILN_CU_CHECK(d.cuGraphInstantiate(&exec, g, 0), "a plan's CUDA graph");
  exec_.reset(exec);
}

void KernelGraph::update(std::size_t i, const GraphLaunch& launch) {
  const CUDA_KERNEL_NODE_PARAMS p = node_params(launch);
  KILN_CU_CHECK(driver().cuGraphExecKernelNodeSetParams(exec_.get(), nodes_.at(i), &p),
                fmt::format("kernel {} of a plan's CUDA graph", i));
}

void KernelGraph::launch(CUstream stream) const {
  KILN_CU_CHECK(driver().cuGraphLaunch(exec_.get(), stream), "a plan's CUDA graph");
}

}  // namespace kiln::runtime
