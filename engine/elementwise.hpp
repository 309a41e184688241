#pragma once
// Specialization of the elementwise template for the exact operands of one kernel: the layout
// is broadcast, stripped of unit dims and coalesced; the vector width follows from pointer
// alignment and strides; the index width from the largest offset.

#include <cstdint>
#include <cstring>
#include <kiln/ops.hpp>
#include <string>
#include <vector>

#include "engine/codegen.hpp"
#include "stages/kernel.hpp"
#include "ops/op.hpp"

namespace kiln {

/// The template's tunables. Zero means the heuristic default.
struct ElementwiseTunables {
  static constexpr int kDefaultBlock = 256;
  static constexpr int kDefaultUnroll =
      2;           // measured best or within noise of best on H200 (bench/NOTES.md)
  int block = 0;   ///< threads per block
  int unroll = 0;  ///< groups per thread, all loaded before the first is used
};

/// `t`'s "block" and "unroll" (missing: 0, the default); ArgumentError naming `stem` for any
/// other name.
ElementwiseTunables elementwise_tunables(const Tunables& t, const std::string& stem);

/// A specialized kernel (elementwise or row) and the arguments of its launch: the Args<P, S>
/// block, then one Index (iterations for elementwise kernels, groups per row for row kernels).
struct KernelLaunch {
  KernelSpec spec;
  std::uint64_t groups = 0;     ///< iterations (V elements each); 0 = nothing to do
  std::uint64_t index_arg = 0;  ///< the kernel's Index parameter
  bool index64 = false;
  int vec = 1;
  unsigned grid = 0;
  unsigned block = 0;
  std::uint64_t stash_bytes = 0;  ///< dynamic shared memory it can use (the row template's stash);
                                  ///< the device may grant less
  std::vector<std::uint64_t> pointers;  ///< outputs, then inputs
  std::vector<float> scalars;
  enum class Kind { elementwise, rows, columns } kind = Kind::elementwise;  ///< its template
  Tunables tunables;  ///< the template's parameters it was specialized with (defaults included)
  /// The bytes of the kernel's Args<P, S> parameter.
  std::vector<unsigned char> args() const;
};

/// A launch's two kernel parameters (the Args block, the Index) where cuLaunchKernel's (or a
/// CUDA graph node's) pointers can point.
class LaunchParams {
 public:
  explicit LaunchParams(const KernelLaunch& L);
  LaunchParams(const LaunchParams&) = delete;
  LaunchParams& operator=(const LaunchParams&) = delete;
  void** pointers() { return ptrs_; }
  /// Both parameters' bytes, to tell whether two launches of one kernel differ.
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
  void* ptrs_[2] = {nullptr, nullptr};
};

/// The iteration layout of a kernel over `shape`: unit dims dropped, dims coalesced, a vector
/// width and an index width chosen. Slots: `outputs` outputs first, then inputs.
struct LayoutPlan {
  struct Dim {
    std::int64_t extent;
    std::vector<std::int64_t> stride;  ///< per slot, in elements (times V for the last dim)
  };
  std::vector<Dim> dims;  ///< outermost first; the last is in groups of `vec` elements
  int vec = 1;
  bool index64 = false;
  std::int64_t groups = 0;  ///< product of the extents
  /// "kiln::Layout<kiln::Dim<...>, ...>", with 0 for the outermost extent: the templates never
  /// read it (the launch's iteration count or grid bounds that dim), so one kernel serves every
  /// extent of it. A dynamic batch dim is outermost, or coalesced into it: a new batch size
  /// reuses the kernel.
  std::string type() const;
};

/// Plans the layout of `views` (outputs first) over `shape`. Outputs may broadcast (step by 0:
/// one value for the whole extent) along the dims flagged in `reduced` (empty: none); a reduced
/// dim stays its own dim even when extent 1, unless all are reduced. With `rows`, the last dim
/// of `shape` stays its own dim (a row) even when extent 1.
LayoutPlan plan_layout(const std::vector<const TensorView*>& views, std::size_t outputs,
                       const Shape& shape, bool rows, std::int64_t slack,
                       const std::vector<bool>& reduced = {});

/// Specializes `body` writing `outputs` (all of one shape) from `inputs` (broadcast to it).
/// `stem` names the kernel ("silu_add_mul"); dtypes, rank and vector width are appended.
/// Throws ShapeError for views that do not fit.
KernelLaunch specialize_elementwise(const codegen::Body& body, const std::string& stem,
                                    const std::vector<TensorView>& outputs,
                                    const std::vector<TensorView>& inputs,
                                    std::vector<float> scalars, ElementwiseTunables tunables = {});

/// The body of one op on `operands` (kernel slots, see ops::kernel_operands): tensor operands
/// become inputs in order, scalar operands runtime scalars.
codegen::Body op_body(const ops::OpDef& op, DType out, const std::vector<Operand>& operands);

/// Specializes one op writing `out`.
KernelLaunch specialize_op(const ops::OpDef& op, const TensorView& out,
                           const std::vector<Operand>& operands, ElementwiseTunables tunables = {});

}  // namespace kiln
