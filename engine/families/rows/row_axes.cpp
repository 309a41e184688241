// Rows over several axes (engine/families/rows/rows.hpp): a reduction's run of adjacent axes
// (arrange_axes), and group_norm's groups (grouped_rows): x [N, C, *spatial] seen as [N, G,
// C / G, *spatial], each (n, g) one row of the dims after G. The row template's cursor steps
// through a row of several dims as one flat index whatever their strides (NCHW or
// channels_last); the column template needs them merged into one. group_norm's weight and bias
// are per channel, not per element of the row: they become the epilogue's first inputs, views
// that step along C / G and by 0 along the spatial dims.
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

// `v` at the rank of x (`x`), its leading dims explicit (extent 1, stride 0), then its dim 1
// (C, or 1 where it broadcasts along C) split into [G, C / G].
TensorView split_channels(TensorView v, const Shape& x, std::int64_t groups) {
  Shape strides = v.resolved_strides();
  while (v.shape.size() < x.size()) {
    v.shape.insert(v.shape.begin(), 1);
    strides.insert(strides.begin(), 0);
  }
  const bool along = v.shape[1] != 1;
  const std::int64_t step = along ? strides[1] : 0, per_group = x[1] / groups;
  v.shape[1] = along ? groups : 1;
  strides[1] = step * per_group;
  v.shape.insert(v.shape.begin() + 2, along ? per_group : 1);
  strides.insert(strides.begin() + 2, step);
  v.strides = strides;
  return v;
}

}  // namespace

TensorView along_channels(TensorView v, std::size_t rank) {
  const std::int64_t channels = v.shape.at(0), step = v.resolved_strides().at(0);
  v.shape.assign(rank, 1);
  v.strides.assign(rank, 0);
  v.shape[1] = channels;
  v.strides[1] = step;
  return v;
}

codegen::Body affine_epilogue(const codegen::Body& epi, const std::vector<TensorView>& affine) {
  using codegen::Ref;
  codegen::Body body;
  const int na = int(affine.size());
  for (const TensorView& v : affine) body.inputs.push_back(v.dtype);
  body.inputs.insert(body.inputs.end(), epi.inputs.begin(), epi.inputs.end());
  body.outputs = epi.outputs;
  body.scalars = epi.scalars;
  Ref value{Ref::Kind::row, 0};
  const char* functors[] = {"kiln::op::Mul", "kiln::op::Add"};
  for (int i = 0; i < na; ++i) {
    codegen::Step s;
    s.functor = functors[i];
    s.args = {value, Ref{Ref::Kind::input, i}};
    body.steps.push_back(s);
    value = Ref{Ref::Kind::step, i};
  }
  const auto moved = [&](Ref r) {
    if (r.kind == Ref::Kind::row) return value;
    if (r.kind == Ref::Kind::input) r.index += na;
    if (r.kind == Ref::Kind::step) r.index += na;
    return r;
  };
  for (codegen::Step s : epi.steps) {
    for (Ref& r : s.args) r = moved(r);
    body.steps.push_back(s);
  }
  for (const Ref& r : epi.results) body.results.push_back(moved(r));
  return body;
}

void arrange_axes(const RowKernel& k, const std::string& stem, Shape& shape,
                  std::vector<TensorView>& all, std::size_t& axis, bool merge) {
  order_axes(k, shape, all, axis);
  if (merge) merge_axes(k, stem, shape, all, axis);
}

RowKernel grouped_rows(const RowKernel& k, const std::string& stem, Shape& shape) {
  const Shape x = shape;
  if (x.size() < 2 || k.groups < 1 || x[1] % k.groups != 0 || k.extras.size() > 2)
    throw ShapeError(
        fmt::format("{}: group_norm of {} groups does not fit x {}", stem, k.groups, to_string(x)));
  RowKernel g = k;
  for (std::vector<TensorView>* list :
       {&g.outputs, &g.inputs, &g.epilogue_inputs, &g.gathers.indices})
    for (TensorView& v : *list) v = split_channels(v, x, k.groups);
  std::vector<TensorView> affine;
  for (const TensorView& e : k.extras) {
    if (e.shape != Shape{x[1]})
      throw ShapeError(fmt::format("{}: {} is not a [{}] of C", stem, e.describe(), x[1]));
    affine.push_back(split_channels(along_channels(e, x.size()), x, k.groups));
  }
  g.epilogue = affine_epilogue(k.epilogue, affine);
  g.epilogue_inputs.insert(g.epilogue_inputs.begin(), affine.begin(), affine.end());
  g.extras.clear();
  shape[1] = k.groups;
  shape.insert(shape.begin() + 2, x[1] / k.groups);
  // The row: every dim after G, the statistic layer_norm's over it.
  g.axis = -1;
  g.axes = int(shape.size()) - 2;
  g.all_axes = false;
  g.groups = 0;
  g.dynamic_row = false;
  g.along_row.clear();
  return g;
}

}  // namespace kiln
