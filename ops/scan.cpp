// cumsum: the inclusive prefix sum along one axis (torch.cumsum), computed by the scan family
// (engine/families/scan/scan_family.cpp) with its producers fused as a prologue and its consumers
// as an epilogue.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

void cumsum(const double* x, std::int64_t n, const double*, const double*, const Attrs& attrs,
            double* out) {
  const bool reverse = attrs.flag("reverse");
  double s = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = reverse ? n - 1 - k : k;
    s += x[i];
    out[i] = s;
  }
}

TensorView infer_cumsum(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const TensorView* x = &float_x(op, args);
  numel_of(x->shape);
  const std::int64_t rank = std::int64_t(x->shape.size());
  const std::int64_t axis = attrs.integer("axis").value_or(-1);
  if (rank == 0)
    throw ShapeError(fmt::format("{}: x has no axis to sum along", describe_args(op, args)));
  if (axis < -rank || axis >= rank)
    throw ShapeError(fmt::format("{}: axis {} is out of range for rank {}", describe_args(op, args),
                                 axis, rank));
  TensorView r;
  r.shape = x->shape;
  r.dtype = x->dtype;
  return r;
}

}  // namespace

std::vector<OpDef> scan_ops() {
  OpDef d;
  d.name = "cumsum";
  d.operands = {"x"};
  d.fusion = {FusionKind::anchor, "scan", /*prologue=*/true, /*epilogue=*/true, /*side_from=*/1};
  d.infer = infer_cumsum;
  d.row_reference = cumsum;
  d.attrs = {
      {"axis",
       AttrType::integer,
       AttrValue(std::int64_t{-1}),
       false,
       {},
       "the axis to sum along (from the end if negative)"},
      {"reverse",
       AttrType::flag,
       AttrValue(false),
       false,
       {},
       "sum from the axis's end: out[i] = x[i] + ... + x[n - 1]"},
  };
  d.doc =
      "The inclusive prefix sum of x along axis (torch.cumsum): out[i] = x[0] + ... + x[i], "
      "summed in f32 whatever the dtype.";
  d.dtypes = "x a float tensor; the result has its dtype.";
  return {d};
}

}  // namespace kiln::ops
