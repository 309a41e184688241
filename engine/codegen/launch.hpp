#pragma once
// A specialized kernel with what its launch needs (shape, pointers, scalars, the template's
// parameters), the layout of its kernel parameters, and the parameter block cuLaunchKernel or a
// CUDA graph node points at: shared by every family.

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "stages/kernel.hpp"
#include "stages/launch.hpp"

namespace kiln {

class Family;

/// Where a value sits among a kernel's parameters: `offset` bytes into parameter `param`.
struct ParamSlot {
  std::uint32_t param = 0;
  std::uint32_t offset = 0;
  /// A scalar stored as a double (a user template's f64 parameter); else as a float.
  bool f64 = false;
};

/// One kernel parameter's bytes, in storage aligned to 8 bytes (cuLaunchKernel reads each
/// parameter at its pointer, as the kernel's ABI aligns it).
class ParamBytes {
 public:
  ParamBytes() = default;
  /// `size` bytes, zero.
  explicit ParamBytes(std::size_t size) : words_((size + 7) / 8, 0), size_(size) {}
  ParamBytes(const void* bytes, std::size_t size) : ParamBytes(size) {
    if (size) std::memcpy(words_.data(), bytes, size);
  }
  explicit ParamBytes(const std::vector<unsigned char>& b) : ParamBytes(b.data(), b.size()) {}
  std::size_t size() const { return size_; }
  unsigned char* data() { return reinterpret_cast<unsigned char*>(words_.data()); }
  const unsigned char* data() const {
    return reinterpret_cast<const unsigned char*>(words_.data());
  }
  std::vector<unsigned char> bytes() const { return {data(), data() + size_}; }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t size_ = 0;
};

/// A TMA tensor map among a kernel's parameters, and how an error encoding it names it.
struct TensorMapParam {
  TensorMapArg map;
  std::string what;
};

/// A kernel's parameters as its family lays them out, and where a launch's values go in them:
/// what LaunchParams copies once and then writes each call's pointers and scalars into.
struct ParamLayout {
  std::vector<ParamBytes> params;  ///< each parameter's bytes, in order
  /// Per pointer (KernelLaunch::pointers' order): where its 8 bytes sit. A pointer that a
  /// tensor map maps is not written there: the map is encoded at its address instead.
  std::vector<ParamSlot> pointers;
  /// Per runtime scalar (LaunchParams::set_scalar's order): where it sits.
  std::vector<ParamSlot> scalars;
  /// Parameters that are tensor maps (128 bytes each) of one of the pointers.
  std::vector<TensorMapParam> maps;
};

/// kiln's layout (kernel_templates' Args<P, S>, then one Index, then for rows of a dynamic
/// length their row::Geometry): the Args block holds `pointers` (8 bytes each), then `scalars`
/// (floats, at least one slot), padded to 8 bytes; the Index is `index`, 8 bytes if `index64`,
/// else 4; `geometry` (empty: none) is the last parameter.
ParamLayout kiln_layout(const std::vector<std::uint64_t>& pointers,
                        const std::vector<float>& scalars, std::uint64_t index, bool index64,
                        std::vector<unsigned char> geometry = {});
/// The Index parameter of a kiln_layout.
std::uint64_t kiln_index(const ParamLayout& layout);

/// A specialized kernel (of any family) and the arguments of its launch: their values and
/// the parameters they are laid out in.
struct KernelLaunch {
  KernelSpec spec;
  std::uint64_t groups = 0;  ///< iterations (V elements each); 0 = nothing to do
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
  /// The kernel's parameters, `pointers` and `scalars` written in (kiln_layout for kiln's
  /// templates).
  ParamLayout layout;
  /// Its family chose it for a bucket of a dynamic dim's extents (rows of a dynamic length, a
  /// product's dynamic M), not for the extent at hand: a plan precompiles it at every extent the
  /// family probes (Family::extent_probes).
  bool bucketed = false;
  const Family* family = nullptr;  ///< the family that specialized it (engine/families)
  Tunables tunables;  ///< the template's parameters it was specialized with (defaults included)
  /// How far (autotune's max_diff) a tuning candidate's output may lie from this kernel's and
  /// still agree; 0: the tolerance of the output's dtype. Products over a long K need more.
  double agreement = 0;
  /// Bytes of scratch memory the kernel takes as its last pointer (`pointers` ends with a 0
  /// for it; 0 bytes: none). Whoever launches it gives each launch its own, zero when first
  /// given; the kernel leaves it as its next launch expects (counters that only grow), so a
  /// CUDA graph replays it as is.
  std::uint64_t workspace = 0;
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

/// A launch's kernel parameters (its KernelLaunch::layout) where cuLaunchKernel's (or a CUDA
/// graph node's) pointers can point; each call writes its pointers and scalars at the places the
/// layout gives.
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
      std::memcpy(at(pointer_at_[i]), &p, 8);
    }
  }
  /// Writes runtime scalar `i` (ParamLayout::scalars' order): a float, or a double where its
  /// slot holds one.
  void set_scalar(std::size_t i, double v) {
    if (i >= scalar_at_.size()) throw_no_scalar(i);
    const ParamSlot& s = scalar_at_[i];
    if (s.f64) {
      std::memcpy(at(s), &v, 8);
    } else {
      const float f = float(v);
      std::memcpy(at(s), &f, 4);
    }
  }
  /// The first `n` pointers' bytes, and whether they equal `bytes`.
  std::vector<unsigned char> pointer_bytes(std::size_t n) const;
  bool pointers_equal(const std::vector<unsigned char>& bytes) const;
  /// Whether a tensor map's address changed since it was encoded (the next pointers() encodes).
  bool maps_stale() const { return stale_; }

 private:
  void encode_maps();
  [[noreturn]] void throw_no_scalar(std::size_t i) const;
  unsigned char* at(const ParamSlot& s) { return params_[s.param].data() + s.offset; }
  // Where pointer i's bytes are: in its parameter, or (a tensor map's) in maps_.
  const unsigned char* pointer(std::size_t i) const {
    if (i < map_of_.size() && map_of_[i] >= 0)
      return reinterpret_cast<const unsigned char*>(&maps_[std::size_t(map_of_[i])].second);
    return params_[pointer_at_[i].param].data() + pointer_at_[i].offset;
  }

  std::vector<ParamBytes> params_;
  std::vector<ParamSlot> pointer_at_, scalar_at_;
  std::vector<void*> ptrs_;
  std::vector<int> map_of_;            ///< per pointer: its index in maps_, or -1
  std::vector<std::int64_t> offsets_;  ///< KernelLaunch::offsets
  std::vector<std::pair<TensorMapParam, std::uint64_t>> maps_;  ///< each map and its address
  bool stale_ = false;  ///< a map's address changed since it was encoded
};

}  // namespace kiln
