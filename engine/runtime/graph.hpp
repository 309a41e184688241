#pragma once
// A CUDA graph of kernel launches in a chain, instantiated once and replayed; a node's
// parameters can be changed in the instantiated graph without rebuilding it.

#include <cuda.h>

#include <memory>
#include <vector>

#include "stages/launch.hpp"

namespace kiln::runtime {

struct GraphDeleter {
  void operator()(CUgraph g) const;
};
struct GraphExecDeleter {
  void operator()(CUgraphExec g) const;
};

/// One launch of the chain: the kernel, its configuration (clusters become a node attribute,
/// which stays on updates; a programmatic launch hangs from the one before by a programmatic
/// edge), and its parameters as cuLaunchKernel wants them (copied into the
/// graph when the node is made or updated).
struct GraphLaunch {
  CUfunction function = nullptr;
  LaunchConfig config;
  void** params = nullptr;
};

class KernelGraph {
 public:
  /// Builds and instantiates the chain (each launch after the previous one) in the current context.
  explicit KernelGraph(const std::vector<GraphLaunch>& launches);
  /// Gives launch i new parameters (same kernel and shape) in the instantiated graph.
  void update(std::size_t i, const GraphLaunch& launch);
  void launch(CUstream stream) const;
  std::size_t size() const { return nodes_.size(); }

 private:
  std::unique_ptr<std::remove_pointer_t<CUgraph>, GraphDeleter> graph_;
  std::unique_ptr<std::remove_pointer_t<CUgraphExec>, GraphExecDeleter> exec_;
  std::vector<CUgraphNode> nodes_;
};

}  // namespace kiln::runtime
