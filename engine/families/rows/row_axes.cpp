// Reductions over several adjacent axes (engine/families/rows/rows.hpp, arrange_axes): the row
// template's cursor steps through a row of several dims as one flat index whatever their
// strides (NCHW or channels_last); the column template needs them merged into one.
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/families/rows/rows.hpp"

namespace kiln {
namespace {

// The run of `k.axes` axes ending at `axis` in the order of x's strides, largest first (C, H
// and W of a channels_last view as H, W, C), as the first input that runs along most of them
// has them: a reduction is the same in any order of its axes, and its row then reads memory in
// order (and coalesces where the strides allow).
void order_axes(const RowKernel& k, Shape& shape, std::vector<TensorView>& all, std::size_t axis) {
  const std::size_t a0 = axis + 1 - std::size_t(k.axes);
  std::vector<std::size_t> order(std::size_t(k.axes));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = a0 + i;
  const auto runs = [&](const TensorView& v) {
    return std::count_if(order.begin(), order.end(),
                         [&](std::size_t d) { return v.shape[d] != 1 && v.strides[d] != 0; });
  };
  const TensorView* lead = nullptr;
  for (std::size_t s = k.outputs.size(); s < all.size(); ++s)
    if (runs(all[s]) > 0 && (!lead || runs(all[s]) > runs(*lead))) lead = &all[s];
  if (!lead) return;
  const auto stride = [lead](std::size_t d) { return lead->shape[d] == 1 ? 0 : lead->strides[d]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return stride(a) > stride(b); });
  const Shape before = shape;
  for (std::size_t i = 0; i < order.size(); ++i) shape[a0 + i] = before[order[i]];
  for (TensorView& v : all) {
    const TensorView w = v;
    for (std::size_t i = 0; i < order.size(); ++i) {
      v.shape[a0 + i] = w.shape[order[i]];
      v.strides[a0 + i] = w.strides[order[i]];
    }
  }
}

// The run of `k.axes` axes ending at `axis` merged into one dim of `shape` and of every view
// (`axis` moves to it), for the column template: ShapeError where some view's strides do not
// let them merge.
void merge_axes(const RowKernel& k, const std::string& stem, Shape& shape,
                std::vector<TensorView>& all, std::size_t& axis) {
  for (std::size_t d = axis; d + std::size_t(k.axes) > axis + 1; --d) {  // d - 1 into d
    for (TensorView& v : all) {  // a view's dim of extent 1 steps by 0 (broadcast, or reduced)
      std::int64_t& outer = v.strides[d - 1];
      const std::int64_t inner = v.shape[d] == 1 ? 0 : v.strides[d];
      if (v.shape[d - 1] == 1) outer = 0;
      if (shape[d - 1] != 1 && shape[d] != 1 && outer != inner * v.shape[d])
        throw ShapeError(fmt::format(
            "{}: the {} axes ending at axis {} of x {} do not lie as one run in the memory of "
            "{} (strides [{}]); reduce one axis after another, or a contiguous copy of x",
            stem, k.axes, axis, to_string(shape), v.describe(), fmt::join(v.strides, ", ")));
      if (shape[d] != 1) outer = inner;
      v.shape[d - 1] *= v.shape[d];
      v.shape.erase(v.shape.begin() + std::ptrdiff_t(d));
      v.strides.erase(v.strides.begin() + std::ptrdiff_t(d));
    }
    shape[d - 1] *= shape[d];
    shape.erase(shape.begin() + std::ptrdiff_t(d));
  }
  axis -= std::size_t(k.axes - 1);
}

}  // namespace

void arrange_axes(const RowKernel& k, const std::string& stem, Shape& shape,
                  std::vector<TensorView>& all, std::size_t& axis, bool merge) {
  order_axes(k, shape, all, axis);
  if (merge) merge_axes(k, stem, shape, all, axis);
}

}  // namespace kiln
