// View ops: reshape, its operand's elements in row-major order under another shape (its memory
// is the operand's where the plan allows, engine/passes/fusion.hpp, else a copy), and slice, a range
// along one axis (a copy, or columns a matrix product's kernel writes).
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <limits>

#include "ops/op.hpp"

namespace kiln::ops {

namespace {

// Whether `result` is `x` with unit dims inserted or removed, nothing else: a [C] vector seen
// as [C, 1, 1] to broadcast along an image's channels.
bool unit_reshape(const Shape& x, const Shape& result) {
  auto kept = [](const Shape& s) {
    Shape out;
    for (std::int64_t e : s)
      if (e != 1) out.push_back(e);
    return out;
  };
  return kept(x) == kept(result);
}

ViewRule::InPlace reshape_in_place(const Shape& x, const Shape& result) {
  return unit_reshape(x, result) ? ViewRule::InPlace::anywhere : ViewRule::InPlace::arena;
}

// reshape's result in x's memory: x itself under the result's shape, where x is contiguous or
// the reshape only inserts or removes unit dims (each other dim keeps its stride; a unit dim
// takes the stride a dense layout would give it, so a contiguous x stays contiguous).
std::optional<TensorView> reshape_of(const TensorView& x, const Shape& result, const Attrs&) {
  TensorView v = x;
  v.shape = result;
  v.strides.clear();
  if (x.is_contiguous()) return v;
  if (!unit_reshape(x.shape, result)) return std::nullopt;
  const Shape from = x.resolved_strides();
  v.strides.assign(result.size(), 1);
  std::size_t d = x.shape.size();
  std::int64_t dense = 1;  // the stride a unit dim takes: its inner neighbour's span
  for (std::size_t r = result.size(); r-- > 0;) {
    if (result[r] != 1) {
      while (x.shape[--d] == 1) {
      }
      dense = from[d];
    }
    v.strides[r] = dense;
    dense = v.strides[r] * std::max<std::int64_t>(result[r], 1);
  }
  return v;
}

// slice's result in x's memory: x narrowed to the range, its address moved to the range's first
// element.
std::optional<TensorView> slice_of(const TensorView& x, const Shape&, const Attrs& attrs) {
  const SliceRange r = slice_range(x.shape, attrs, "slice");
  TensorView v = x;
  v.strides = x.resolved_strides();
  v.shape[r.axis] = r.stop - r.start;
  v.data += std::uint64_t(r.start * v.strides[r.axis] * std::int64_t(size_of(x.dtype)));
  return v;
}

// A slice along x's last axis: its first column.
std::optional<std::int64_t> slice_window(const Shape& x, const Attrs& attrs) {
  const SliceRange r = slice_range(x, attrs, "slice");
  if (r.axis + 1 != x.size()) return std::nullopt;
  return r.start;
}

}  // namespace

std::vector<OpDef> view_ops() {
  OpDef reshape;
  reshape.name = "reshape";
  reshape.operands = {"x"};
  reshape.fusion = {FusionKind::view};
  reshape.infer = infer_view;
  reshape.dtypes = "x of any dtype; the result has its dtype and as many elements.";
  OpDef slice = reshape;
  reshape.attrs = {{"shape", AttrType::extents, std::nullopt, true, {},
                    "the result's extents; one may be -1: what the element count leaves"}};
  reshape.doc = "x's elements in row-major order under another shape (its memory where the plan "
                "allows, else a copy).";
  reshape.view = {ViewRule::InPlace::arena, /*row_major=*/true, reshape_of};
  reshape.view.in_place_for = reshape_in_place;
  slice.name = "slice";
  slice.attrs = {
      {"axis", AttrType::integer, AttrValue(std::int64_t{-1}), false, {},
       "the axis to slice (from the end if negative)"},
      {"start", AttrType::integer, std::nullopt, true, {},
       "the first index kept (from the end if negative)"},
      {"stop", AttrType::integer, std::nullopt, true, {},
       "the index after the last kept (from the end if negative)"},
  };
  slice.doc = "x[..., start:stop, ...] along axis, Python's indexes (both within the axis).";
  slice.view = {ViewRule::InPlace::never, /*row_major=*/false, slice_of, slice_window};
  return {reshape, slice};
}

SliceRange slice_range(const Shape& x, const Attrs& attrs, const std::string& what) {
  const std::optional<std::int64_t> start = attrs.integer("start"), stop = attrs.integer("stop");
  if (!start || !stop)
    throw ArgumentError(fmt::format("{}: needs attributes start and stop", what));
  const auto rank = std::int64_t(x.size());
  const std::int64_t axis = attrs.integer("axis").value_or(-1);
  if (rank == 0 || axis < -rank || axis >= rank)
    throw ShapeError(fmt::format("{}: axis {} is outside x's {} dims", what, axis, rank));
  SliceRange r;
  r.axis = std::size_t(axis < 0 ? axis + rank : axis);
  const std::int64_t extent = x[r.axis];
  if (extent < 0)
    throw ShapeError(fmt::format("{}: axis {} is dynamic; slice takes a static axis", what, axis));
  auto index = [&](std::int64_t i, const char* name) {
    const std::int64_t at = i < 0 ? i + extent : i;
    if (at < 0 || at > extent)
      throw ShapeError(
          fmt::format("{}: {} {} is outside axis {} of extent {}", what, name, i, axis, extent));
    return at;
  };
  r.start = index(*start, "start");
  r.stop = index(*stop, "stop");
  if (r.stop < r.start)
    throw ShapeError(fmt::format("{}: stop {} comes before start {} (axis {} of extent {})", what,
                                 *stop, *start, axis, extent));
  return r;
}

namespace {

TensorView infer_slice(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs,
                       const TensorView& x) {
  const SliceRange r = slice_range(x.shape, attrs, describe_args(op, args));
  TensorView out;
  out.shape = x.shape;
  out.shape[r.axis] = r.stop - r.start;
  out.dtype = x.dtype;
  return out;
}

}  // namespace

TensorView infer_view(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const auto* x = std::get_if<TensorView>(&args[0]);
  if (!x) throw ArgumentError(fmt::format("{}: x must be a tensor", describe_args(op, args)));
  if (op.name == "slice") return infer_slice(op, args, attrs, *x);
  std::optional<Shape> to = attrs.extents("shape");
  if (!to) throw ArgumentError(fmt::format("{}: needs attribute shape", describe_args(op, args)));
  for (std::int64_t d : x->shape)
    if (d < 0)
      throw ShapeError(fmt::format("{}: x has a dynamic dim; reshape takes static shapes",
                                   describe_args(op, args)));
  const std::int64_t n = numel_of(x->shape);
  Shape shape = std::move(*to);
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) {
      infer = std::int64_t(i);
      continue;
    }
    if (shape[i] < 0)
      throw ShapeError(fmt::format("{}: shape {}: extents are 0 or more, one of them may be -1",
                                   describe_args(op, args), to_string(shape)));
    if (shape[i] > 0 && known > std::numeric_limits<std::int64_t>::max() / shape[i])
      throw ShapeError(fmt::format("{}: shape {} holds more than 2^63 elements",
                                   describe_args(op, args), to_string(shape)));
    known *= shape[i];
  }
  if (infer >= 0) {
    if (known == 0 || n % known)
      throw ShapeError(fmt::format("{}: no extent for -1 makes shape {} hold {} elements",
                                   describe_args(op, args), to_string(shape), n));
    shape[std::size_t(infer)] = n / known;
  } else if (known != n) {
    throw ShapeError(fmt::format("{}: shape {} holds {} elements, x has {}",
                                 describe_args(op, args), to_string(shape), known, n));
  }
  TensorView r;
  r.shape = shape;
  r.dtype = x->dtype;
  return r;
}

}  // namespace kiln::ops
