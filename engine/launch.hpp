#pragma once
// A specialized kernel with what its launch needs (shape, pointers, scalars, the template's
// parameters) and the parameter block cuLaunchKernel or a CUDA graph node points at: shared by
// every family.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "stages/kernel.hpp"

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
  unsigned grid = 0;
  unsigned block = 0;
  unsigned cluster = 1;           ///< blocks per thread-block cluster given at launch (1: none)
  std::uint64_t stash_bytes = 0;  ///< dynamic shared memory it can use (the row template's stash);
                                  ///< the device may grant less
  std::vector<std::uint64_t> pointers;  ///< outputs, then inputs
  std::vector<float> scalars;
  /// The row::Geometry parameter of a kernel for rows of a dynamic length (empty: none): it
  /// serves a bucket of lengths, and this launch's rows are placed by these bytes.
  std::vector<unsigned char> geometry;
  const Family* family = nullptr;  ///< the family that specialized it (engine/families)
  Tunables tunables;  ///< the template's parameters it was specialized with (defaults included)
  /// The bytes of the kernel's Args<P, S> parameter.
  std::vector<unsigned char> args() const;
};

/// A launch's kernel parameters (the Args block, the Index, the geometry if any) where
/// cuLaunchKernel's (or a CUDA graph node's) pointers can point.
class LaunchParams {
 public:
  explicit LaunchParams(const KernelLaunch& L);
  LaunchParams(const LaunchParams&) = delete;
  LaunchParams& operator=(const LaunchParams&) = delete;
  void** pointers() { return ptrs_; }
  /// Every parameter's bytes, to tell whether two launches of one kernel differ.
  std::vector<unsigned char> bytes() const;
  /// Writes pointer `i` (KernelLaunch::pointers' order) of the Args block.
  void set_pointer(std::size_t i, std::uint64_t p) { std::memcpy(args_.data() + 8 * i, &p, 8); }
  /// Writes scalar `i` of the Args block (after the pointers: `pointers` of them).
  void set_scalar(std::size_t pointers, std::size_t i, float v) {
    std::memcpy(args_.data() + 8 * pointers + 4 * i, &v, 4);
  }
  /// The pointers' bytes (the first `n` of the Args block), and whether they equal `bytes`.
  std::vector<unsigned char> pointer_bytes(std::size_t n) const {
    return {args_.begin(), args_.begin() + std::ptrdiff_t(8 * n)};
  }
  bool pointers_equal(const std::vector<unsigned char>& bytes) const {
    return bytes.size() <= args_.size() &&
           std::memcmp(bytes.data(), args_.data(), bytes.size()) == 0;
  }

 private:
  std::vector<unsigned char> args_;
  unsigned int index32_ = 0;
  unsigned long long index64_ = 0;
  std::vector<unsigned long long> geometry_;  ///< 8-byte aligned, as row::Geometry is
  void* ptrs_[3] = {nullptr, nullptr, nullptr};
};

}  // namespace kiln
