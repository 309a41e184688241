// group_norm over x [N, C, *spatial] (torch.nn.GroupNorm): the mean and variance of each
// sample's group of C / groups channels (over the spatial dims too), each channel's weight and
// bias after. The rows family computes it (engine/families/rows/row_axes.cpp): each group is
// a row of the row template, its producers fused as a prologue and its consumers as an epilogue,
// contiguous NCHW or a channels_last view alike.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

TensorView infer_group_norm(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const TensorView& x = float_x(op, args);
  numel_of(x.shape);
  if (x.shape.size() < 2)
    throw ShapeError(
        fmt::format("{}: x must be [N, C, *spatial] (rank 2 or more)", describe_args(op, args)));
  const std::int64_t channels = x.shape[1];
  const auto groups = attrs.integer("groups");
  if (!groups)
    throw ArgumentError(fmt::format("{}: groups is required: the number of groups C splits into",
                                    describe_args(op, args)));
  if (channels % *groups != 0)
    throw ShapeError(fmt::format("{}: C = {} does not split into {} groups",
                                 describe_args(op, args), channels, *groups));
  if (numel_of(x.shape) == 0)
    throw ShapeError(fmt::format("{}: x is empty", describe_args(op, args)));
  check_affine(op, args, attrs, channels, "C, dim 1 of x");
  TensorView r;
  r.shape = x.shape;
  r.dtype = x.dtype;
  return r;
}

}  // namespace

std::vector<OpDef> group_norm_ops() {
  OpDef d;
  d.name = "group_norm";
  d.operands = {"x", "weight", "bias"};
  d.min_operands = 1;
  // Each group is a row of the row template: layer_norm's statistic, without its affine (the
  // weight and bias are per channel, applied in the epilogue: row_axes.cpp).
  d.functor = "kiln::row::LayerNorm";
  d.fusion = {FusionKind::anchor, "rows", /*prologue=*/true, /*epilogue=*/true, /*side_from=*/1};
  d.fusion.hands_on = true;
  d.infer = infer_group_norm;
  // channels_last in, channels_last out: a convolution after it reads its result in place.
  d.memory_order = keeps_channels_last;
  d.attrs = {
      {"groups",
       AttrType::integer,
       std::nullopt,
       true,
       {1, kInf, false},
       "the groups C splits into (C a multiple of it)"},
      {"eps",
       AttrType::number,
       AttrValue(kDefaultEps),
       false,
       {0, kInf, true},
       "added to the variance before its square root"},
  };
  d.doc =
      "(x - mean) / sqrt(var + eps) * weight[c] + bias[c] over x [N, C, *spatial], the mean "
      "and (biased) variance of each sample's group of C / groups channels and every spatial "
      "position (torch.nn.functional.group_norm); weight and bias [C] are optional.";
  d.dtypes =
      "x a float tensor, the result's dtype; weight and bias float tensors of shape [C], C "
      "dim 1 of x.";
  return {d};
}

}  // namespace kiln::ops
