#pragma once
// A specialized kernel with what its launch needs (shape, pointers, scalars, the template's
// parameters) and the parameter block cuLaunchKernel or a CUDA graph node points at: shared by
// every family.

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "stages/kernel.hpp"
#include "stages/launch.hpp"

namespace kiln {

class Family;

/// A specialized kernel (of any family) and the arguments of its launch: the Args<P, S>
/// block, then one Index (iterations for elementwise kernels, groups per row for row kernels),
/// then, for rows of a dynamic length, their geometry (rows.cuh's row::Geometry).
struct KernelLaunch {
  KernelSpec spec;
  std::uint64_t groups = 0;     ///< iterations (V elements each); 0 = nothing to do
  std::uint64_t index_arg = 0;  ///< the kernel's Index parameter
  bool index64 = false;
  int vec = 1;
  /// Grid, block, clusters, and the dynamic shared memory the kernel can use (the row
  /// template's stash; the device may grant less).
  LaunchConfig config;
  std::vector<std::uint64_t> pointers;  ///< outputs, then inputs (their offsets included)
  /// Bytes added to each pointer's tensor address (empty: none): a slice's first element, or
  /// where a product's output window would have its column 0. LaunchParams::set_pointer adds
  /// them.
  std::vector<std::int64_t> offsets;
  std::vector<float> scalars;
  /// The row::Geometry parameter of a kernel for rows of a dynamic length (empty: none): it
  /// serves a bucket of lengths, and this launch's rows are placed by these bytes.
  std::vector<unsigned char> geometry;
  /// Its family chose it for a bucket of a dynamic dim's extents (rows of a dynamic length, a
  /// product's dynamic M), not for the extent at hand: a plan precompiles it at every extent the
  /// family probes (Family::extent_probes).
  bool bucketed = false;
  const Family* family = nullptr;  ///< the family that specialized it (engine/families)
  /// The kernel's parameters where a family lays them out itself (a user template's: one per
  /// parameter, in order), with where each of `pointers` sits in them (parameter, byte offset).
  /// Empty: kiln's layout, the Args block, the Index and the geometry.
  std::vector<std::vector<unsigned char>> own_params;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pointer_at;
  /// Parameters that are TMA tensor maps of one of `pointers` (encoded where LaunchParams
  /// writes that pointer; their `pointer_at` offset is unused).
  std::vector<TensorMapArg> maps;
  Tunables tunables;  ///< the template's parameters it was specialized with (defaults included)
  /// How far (autotune's max_diff) a tuning candidate's output may lie from this kernel's and
  /// still agree; 0: the tolerance of the output's dtype. Products over a long K need more.
  double agreement = 0;
  /// The bytes of the kernel's Args<P, S> parameter.
  std::vector<unsigned char> args() const;
};

/// ShapeError: `what` (the kernel and the shape it is for) needs `blocks` blocks.
[[noreturn]] void throw_grid_too_large(std::uint64_t blocks, const std::string& what);

/// `blocks` as a grid's x extent (kernels whose blocks take one share of the work each, no
/// stride); ShapeError naming `what()` where that is more than a grid holds (2^31 - 1).
template <class What>
unsigned grid_x(std::uint64_t blocks, const What& what) {
  if (blocks > 0x7fffffffu) throw_grid_too_large(blocks, what());
  return unsigned(blocks);
}

/// A launch's kernel parameters (kiln's layout: the Args block, the Index, the geometry if any;
/// or a family's own) where cuLaunchKernel's (or a CUDA graph node's) pointers can point.
class LaunchParams {
 public:
  explicit LaunchParams(const KernelLaunch& L);
  LaunchParams(const LaunchParams&) = delete;
  LaunchParams& operator=(const LaunchParams&) = delete;
  /// What cuLaunchKernel takes: a pointer to each parameter's bytes. Tensor maps whose tensor
  /// moved are encoded here, so call it with the engine's context current.
  void** pointers() {
    if (stale_) encode_maps();
    return ptrs_.data();
  }
  /// Every parameter's bytes, to tell whether two launches of one kernel differ.
  std::vector<unsigned char> bytes() const;
  /// Writes pointer `i` (KernelLaunch::pointers' order) for tensor address `p` (plus the
  /// launch's offset); a tensor map of it is encoded again by the next pointers().
  void set_pointer(std::size_t i, std::uint64_t p) {
    if (i < offsets_.size()) p += std::uint64_t(offsets_[i]);
    if (i < map_of_.size() && map_of_[i] >= 0) {
      stale_ = stale_ || maps_[std::size_t(map_of_[i])].second != p;
      maps_[std::size_t(map_of_[i])].second = p;
    } else {
      std::memcpy(pointer(i), &p, 8);
    }
  }
  /// Writes scalar `i` of kiln's Args block (after the pointers: `pointers` of them).
  void set_scalar(std::size_t pointers, std::size_t i, float v) {
    std::memcpy(data(0) + 8 * pointers + 4 * i, &v, 4);
  }
  /// The first `n` pointers' bytes, and whether they equal `bytes`.
  std::vector<unsigned char> pointer_bytes(std::size_t n) const;
  bool pointers_equal(const std::vector<unsigned char>& bytes) const;

 private:
  void encode_maps();
  unsigned char* data(std::size_t param) {
    return reinterpret_cast<unsigned char*>(params_[param].data());
  }
  // Where pointer i's bytes are: in its parameter, or (a tensor map's) in map_address_.
  const unsigned char* pointer(std::size_t i) const {
    if (i < map_of_.size() && map_of_[i] >= 0)
      return reinterpret_cast<const unsigned char*>(&maps_[std::size_t(map_of_[i])].second);
    return reinterpret_cast<const unsigned char*>(params_[at_[i].first].data()) + at_[i].second;
  }
  unsigned char* pointer(std::size_t i) { return data(at_[i].first) + at_[i].second; }

  std::vector<std::vector<unsigned long long>> params_;  ///< each 8-byte aligned
  std::vector<std::size_t> sizes_;                       ///< each parameter's bytes
  std::vector<std::pair<std::uint32_t, std::uint32_t>> at_;
  std::vector<void*> ptrs_;
  std::vector<int> map_of_;            ///< per pointer: its index in maps_, or -1
  std::vector<std::int64_t> offsets_;  ///< KernelLaunch::offsets
  std::vector<std::pair<TensorMapArg, std::uint64_t>> maps_;  ///< each map and its address
  bool stale_ = false;  ///< a map's address changed since it was encoded
};

}  // namespace kiln
