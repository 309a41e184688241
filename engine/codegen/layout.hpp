#pragma once
// The iteration layout every family plans for its operands: broadcast strides, unit dims
// dropped, dims coalesced, the vector width from alignment and strides, the index width from
// the largest offset.

#include <cstdint>
#include <kiln/tensor.hpp>
#include <string>
#include <vector>

namespace kiln {

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

/// The strides of `v` broadcast to `shape` (right-aligned, 0 along a broadcast dim); ShapeError
/// naming the `role` ("input", "output") of a view that does not broadcast to it or has a
/// negative stride.
std::vector<std::int64_t> broadcast_strides(const TensorView& v, const Shape& shape,
                                            const char* role);

/// `v` over `shape` with explicit strides (broadcast_strides: 0 where it broadcasts), its dim
/// `axis` moved last: what a kernel working along `axis` (a scan, an arg search) sees as rows.
TensorView axis_last(const TensorView& v, const Shape& shape, std::size_t axis, const char* role);

/// Plans the layout of `views` (outputs first) over `shape`. Outputs may broadcast (step by 0:
/// one value for the whole extent) along the dims flagged in `reduced` (empty: none); a reduced
/// dim stays its own dim even when extent 1, unless all are reduced. With `rows`, the last dim
/// of `shape` stays its own dim (a row) even when extent 1. Without rows or reduced dims, the
/// dims are iterated in the first output's memory order (largest stride outermost).
/// Packs hold at most `max_vec` elements (a slot read at indices packs V of its own elements
/// in registers whatever its strides).
LayoutPlan plan_layout(const std::vector<const TensorView*>& views, std::size_t outputs,
                       const Shape& shape, bool rows, std::int64_t slack,
                       const std::vector<bool>& reduced = {}, int max_vec = 16);

}  // namespace kiln
