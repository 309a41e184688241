// View ops: reshape, its operand's elements in row-major order under another shape. Their
// memory is the operand's where the plan allows (engine/fusion.hpp), else a copy.
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <limits>

#include "ops/op.hpp"

namespace kiln::ops {

std::vector<OpDef> view_ops() {
  OpDef d;
  d.name = "reshape";
  d.operands = {"x"};
  d.fusion = FusionClass::view;
  return {d};
}

TensorView infer_view(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const auto* x = std::get_if<TensorView>(&args[0]);
  if (!x) throw ArgumentError(fmt::format("{}: x must be a tensor", describe_args(op, args)));
  if (attrs.min || attrs.max || attrs.dtype || attrs.axis || attrs.all_axes || attrs.keepdim ||
      attrs.eps || attrs.tf32)
    throw ArgumentError(fmt::format("{}: takes no attribute but shape", describe_args(op, args)));
  if (!attrs.shape)
    throw ArgumentError(fmt::format("{}: needs attribute shape", describe_args(op, args)));
  for (std::int64_t d : x->shape)
    if (d < 0)
      throw ShapeError(fmt::format("{}: x has a dynamic dim; reshape takes static shapes",
                                   describe_args(op, args)));
  const std::int64_t n = numel_of(x->shape);
  Shape shape = *attrs.shape;
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
