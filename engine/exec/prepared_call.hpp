#pragma once
// What the first call of a signature prepares for every later one: an eager op's or a template
// launch's one kernel, or a plan call's kernels with its arena and replay's CUDA graph. Each
// later call only writes its pointers and scalars into the prepared parameters and launches.

#include <cstdint>
#include <kiln/tensor.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/codegen/launch.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/runtime/graph.hpp"

namespace kiln::detail {

/// The first word of an engine's signatures (EngineImpl::calls): eager ops and template
/// launches share one cache and never match each other.
enum class CallKind : std::int64_t { op = 1, template_launch = 2 };

struct PreparedCall {
  /// A kernel with work: specialized, loaded, its parameters and launch configuration.
  struct Launch {
    KernelLaunch launch;
    const LoadedKernel* kernel = nullptr;  ///< owned by the engine, which outlives its calls
    std::unique_ptr<LaunchParams> params;
    LaunchConfig config;  ///< what the launch runs with (config_for: the device's shared memory)
    // A plan's only:
    std::vector<int> nodes;               ///< the node whose data each pointer takes
    std::vector<unsigned char> in_graph;  ///< the pointers replay's graph node holds
    std::string label;                    ///< what it computes (describe_group), for NVTX
    /// Where it gathers (kernel_templates/kiln/gather.cuh): what a report of each index
    /// tensor's slot names (the gather view's op and name, its axis's extent), and its status
    /// word's index in `status`.
    struct Gather {
      std::uint32_t slot = 0;
      std::string what, tail;  ///< before the index, and after the range
      std::int64_t extent = 0;
    };
    std::vector<Gather> gathers;
    std::size_t status_word = 0;
    std::uint64_t workspace_at = 0;  ///< its part of the call's workspace, from its start
  };
  /// An output a plan call allocates (none given for it).
  struct Made {
    std::string name;
    int node = -1;
    Shape shape;
    DType dtype = DType::f32;
    Shape strides;  ///< empty: row-major; else the memory order its op asks for (channels_last)
  };
  std::mutex mutex;              ///< one call at a time writes the parameters
  std::vector<Launch> launches;  ///< none: nothing to launch
  // A plan's only:
  std::vector<Made> made;
  std::vector<std::int64_t> arena_offset;       ///< per node: its offset in the arena, or -1
  std::vector<std::pair<int, int>> aliases;     ///< views sharing their operand's memory
  std::int64_t arena_bytes = 0;                 ///< what its intermediates take of the plan's arena
  std::vector<std::uint64_t> data;              ///< per node: its data pointer in the current call
  std::unique_ptr<runtime::KernelGraph> graph;  ///< replay's, built at its first replay
  /// One status word per launch that gathers, zero until an index outside its axis reports
  /// itself (engine/exec/gather_status.hpp); allocated at the first call on a device.
  Tensor status;
  std::size_t status_words = 0;
  /// The launches' workspaces (KernelLaunch::workspace), one part each, zeroed when allocated
  /// at the first call on a device (engine/exec/workspace.hpp), and whether their pointers are
  /// written (later calls then do nothing).
  Tensor workspace;
  bool workspace_bound = false;
};

/// `L` loaded as `kernel`, its parameters laid out, to run with `config`.
inline PreparedCall::Launch prepared_launch(KernelLaunch L, const LoadedKernel& kernel,
                                            const LaunchConfig& config) {
  PreparedCall::Launch l;
  l.kernel = &kernel;
  l.params = std::make_unique<LaunchParams>(L);
  l.config = config;
  l.launch = std::move(L);
  return l;
}

}  // namespace kiln::detail
