#pragma once
// How one kernel is launched, apart from its arguments: a plain value every family fills and
// the runtime hands to cuLaunchKernelEx or a CUDA graph node (stages/: depends on nothing of
// engine/).

#include <array>
#include <cstdint>
#include <string>

namespace kiln {

/// Grid and block dims (x, y, z), thread-block cluster dims, and dynamic shared memory.
struct LaunchConfig {
  std::array<unsigned, 3> grid = {0, 1, 1};  ///< blocks; a 0 anywhere: nothing to launch
  std::array<unsigned, 3> block = {0, 1, 1};
  /// Blocks per thread-block cluster (sm_90 and later; a launch attribute, so a kernel compiled
  /// without cluster dims can run in clusters of any size). {1, 1, 1}: no clusters.
  std::array<unsigned, 3> cluster = {1, 1, 1};
  /// Dynamic shared memory per block, bytes. A family states what the kernel can use; the
  /// launch gets that much, up to what the device grants.
  unsigned shared = 0;
  /// The kernel needs all of `shared` (a GEMM's stage ring), where others only use what they
  /// get (a row's stash): a device that grants less never runs it.
  bool shared_required = false;
  /// grid[0] counts the work's blocks, and the kernel strides over them by gridDim.x: a launch
  /// runs at most one block per SM (LoadedKernel::config_for), each taking several.
  bool persistent = false;
  /// The kernel waits for the kernel before it on the stream (griddepcontrol.wait, sm_90 and
  /// later) before it touches memory, so it may launch while that one finishes: programmatic
  /// stream serialization, a programmatic edge in a CUDA graph.
  bool programmatic = false;
  /// The kernel runs beside the kernel before it (a concat's next part after its previous one):
  /// it reads and writes nothing that one touches, lets the kernel after it start early
  /// (griddepcontrol.launch_dependents), and waits for the one before it only before it exits,
  /// so their blocks share the GPU and the stream's order still holds at its end. Launched as a
  /// programmatic one is; a launch of it alone (the tuner's) clears it.
  bool beside = false;
  /// Every block of the grid runs at once: the blocks wait for each other (a grid-wide merge
  /// through the launch's workspace, KernelLaunch::workspace). A cooperative launch, which fails
  /// rather than hangs where the device cannot hold them all.
  bool cooperative = false;

  bool empty() const { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0; }
  bool clustered() const { return cluster[0] * cluster[1] * cluster[2] > 1; }
  /// "grid 128x1x1 block 256x1x1 cluster 2x1x1 shared 4096" (cluster and shared when set).
  std::string describe() const {
    auto dims = [](const std::array<unsigned, 3>& d) {
      return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
    };
    std::string s = "grid " + dims(grid) + " block " + dims(block);
    if (clustered()) s += " cluster " + dims(cluster);
    if (shared) s += " shared " + std::to_string(shared);
    if (persistent) s += " persistent";
    if (programmatic) s += " programmatic";
    if (beside) s += " beside";
    if (cooperative) s += " cooperative";
    return s;
  }
};

/// A TMA tensor map (CUtensorMap) a kernel takes by value (`const __grid_constant__`),
/// described apart from its global address, so that a launch on another tensor of the same
/// shape encodes it again (cuTensorMapEncodeTiled).
struct TensorMapDesc {
  int data_type = 0;                    ///< a CUtensorMapDataType
  unsigned rank = 0;                    ///< 1 to 5
  std::array<std::uint64_t, 5> dims{};  ///< elements, innermost first
  std::array<std::uint64_t, 4>
      strides{};                       ///< bytes between steps of dims 1.., each a multiple of 16
  std::array<std::uint32_t, 5> box{};  ///< the tile one copy moves, innermost first
  int swizzle = 0;                     ///< a CUtensorMapSwizzle
  /// An im2col map (cuTensorMapEncodeIm2col) of an [N, H, W, C] tensor (dims C, W, H, N): a copy
  /// moves `pixels` pixels of `channels` channels, walking W then H then N with `steps` (the
  /// traversal strides, innermost first) over the box from `lower` to the far corner plus `upper`
  /// (each {H, W}); box is unused.
  bool im2col = false;
  std::array<int, 2> lower{}, upper{};
  std::uint32_t channels = 0, pixels = 0;
  std::array<std::uint32_t, 5> steps{1, 1, 1, 1, 1};
};

/// A tensor map among a kernel's parameters: parameter `param` (128 bytes) maps the tensor
/// whose address is pointer `pointer` of the launch.
struct TensorMapArg {
  std::uint32_t param = 0;
  std::uint32_t pointer = 0;
  TensorMapDesc desc;
};

}  // namespace kiln
