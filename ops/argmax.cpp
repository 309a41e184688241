// argmax and argmin: the position of the largest (smallest) element along an axis, as an i64
// (torch.argmax, torch.argmin): the first of equal ones, and a NaN beats every number (the
// first NaN's position). Computed by the arg family (engine/families/arg/) with the elementwise
// producers of x fused as its prologue.
#include <cmath>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

template <bool Min>
void position(const double* x, std::int64_t n, const double*, const double*, const Attrs&,
              double* out) {
  std::int64_t best = 0;
  for (std::int64_t i = 1; i < n && !std::isnan(x[best]); ++i)
    if (std::isnan(x[i]) || (Min ? x[i] < x[best] : x[i] > x[best])) best = i;
  out[0] = double(best);
}

TensorView infer_arg(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  TensorView r = infer_row(op, args, attrs);
  r.dtype = DType::i64;
  return r;
}

template <bool Min>
OpDef arg_op(std::string_view name, std::string_view doc) {
  OpDef d;
  d.name = name;
  d.operands = {"x"};
  d.fusion = {FusionKind::anchor, "arg", /*prologue=*/true, /*epilogue=*/false, /*side_from=*/1};
  d.fusion.gathers = true;
  d.infer = infer_arg;
  d.row_reference = position<Min>;
  d.reduces = true;
  d.attrs = {
      {"axis",
       AttrType::integer,
       AttrValue(std::int64_t{-1}),
       false,
       {},
       "the axis to search along (from the end if negative)"},
      {"keepdim", AttrType::flag, AttrValue(false), false, {}, "keep the axis, of extent 1"}};
  d.doc = doc;
  d.dtypes = "x a float tensor; the result is i64.";
  return d;
}

}  // namespace

std::vector<OpDef> arg_ops() {
  return {arg_op<false>("argmax",
                        "The position of the largest element of x along axis (torch.argmax): "
                        "the first of equal ones; a NaN counts as the largest."),
          arg_op<true>("argmin",
                       "The position of the smallest element of x along axis (torch.argmin): "
                       "the first of equal ones; a NaN counts as the smallest.")};
}

}  // namespace kiln::ops
