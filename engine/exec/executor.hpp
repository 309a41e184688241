#pragma once
// What the first call of a signature prepares for every later one (engine/exec/executor.cpp).

#include <cstdint>
#include <kiln/graph.hpp>
#include <kiln/tensor.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/exec/engine_impl.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/exec/plan_impl.hpp"
#include "engine/runtime/graph.hpp"

namespace kiln::detail {

struct PreparedCall {
  /// A kernel with work: specialized, loaded, its parameter block, and the node whose data
  /// each of its pointers takes.
  struct Launch {
    KernelLaunch launch;
    const LoadedKernel* kernel = nullptr;  ///< owned by the engine, which outlives its calls
    std::vector<int> nodes;
    std::unique_ptr<LaunchParams> params;
    LaunchConfig config;  ///< the launch's, with the shared memory the device grants
    std::vector<unsigned char> in_graph;  ///< the pointers replay's graph node holds
    std::string label;                    ///< what it computes (describe_group), for NVTX
  };
  /// An output the call allocates (none given for it).
  struct Made {
    std::string name;
    int node = -1;
    Shape shape;
    DType dtype = DType::f32;
  };
  std::mutex mutex;  ///< one call at a time writes the blocks
  std::vector<Launch> launches;
  std::vector<Made> made;
  std::vector<std::int64_t> arena_offset;       ///< per node: its offset in the arena, or -1
  std::vector<std::pair<int, int>> aliases;     ///< views sharing their operand's memory
  std::int64_t arena_bytes = 0;                 ///< what its intermediates take of the plan's arena
  std::vector<std::uint64_t> data;              ///< per node: its data pointer in the current call
  std::unique_ptr<runtime::KernelGraph> graph;  ///< replay's, built at its first replay
};

/// The engine's view of a plan's insides.
struct PlanAccess {
  static const PlanImpl& impl(const Plan& p) { return *p.impl_; }
};

/// Writes the data of a call whose signature matched `call` into its parameter blocks, after
/// checking the views (null, misaligned, too short); allocates the outputs not given (returned)
/// and takes the plan's arena. Caller holds call.mutex.
std::map<std::string, Tensor> bind_data(PreparedCall& call, const PlanImpl& plan, Engine& engine,
                                        const std::map<std::string, TensorView>& inputs,
                                        const std::map<std::string, TensorView>& outputs);

}  // namespace kiln::detail
