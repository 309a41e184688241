// upsample_nearest: x [N, C, *spatial] with each spatial axis repeated `scale` times entry by
// entry (torch.nn.functional.interpolate, mode "nearest", an integer scale_factor). A remap view
// (ViewRule::remap): the kernel that consumes it reads x in place at each coordinate divided
// by the scale (kernel_templates/kiln/gather.cuh), NCHW or channels_last alike (x's strides);
// a copy only where the view is an output or a kernel that cannot read it so.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

TensorView infer_upsample(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const auto* x = std::get_if<TensorView>(&args.at(0));
  const std::string what = describe_args(op, args);
  if (!x) throw ArgumentError(fmt::format("{}: x must be a tensor", what));
  if (x->shape.size() < 3)
    throw ShapeError(fmt::format("{}: x must be [N, C, *spatial] (rank 3 to 5), not of rank {}",
                                 what, x->shape.size()));
  const std::int64_t scale = attrs.integer("scale").value_or(2);
  TensorView r;
  r.dtype = x->dtype;
  r.shape = x->shape;
  for (std::size_t d = 2; d < r.shape.size(); ++d) {
    if (x->shape[d] == kDynamicStandIn)
      throw ShapeError(fmt::format("{}: x is dynamic along spatial axis {}: upsample static axes",
                                   what, d));
    if (scale < 1 || x->shape[d] > (std::int64_t(1) << 40) / scale)
      throw ShapeError(fmt::format("{}: spatial axis {} of extent {} times {} is too large", what,
                                   d, x->shape[d], scale));
    r.shape[d] = x->shape[d] * scale;
  }
  numel_of(r.shape);
  return r;
}

std::optional<TensorView> spatial_zero(const TensorView& x, const Shape& result, const Attrs&) {
  TensorView v = x;
  v.strides = x.resolved_strides();
  for (std::size_t d = 2; d < v.strides.size(); ++d) v.strides[d] = 0;
  v.shape = result;
  return v;
}

Remap nearest(const Shape& x, const Attrs& attrs) {
  Remap r;
  const std::int64_t scale = attrs.integer("scale").value_or(2);
  for (std::size_t d = 2; d < x.size(); ++d) r.axes.push_back({d, 0, scale});
  return r;
}

}  // namespace

std::vector<OpDef> upsample_ops() {
  OpDef d;
  d.name = "upsample_nearest";
  d.operands = {"x"};
  d.fusion = {FusionKind::view};
  d.infer = infer_upsample;
  d.view.in_place = ViewRule::InPlace::anywhere;
  d.view.of = spatial_zero;
  d.view.remap = nearest;
  d.attrs = {{"scale",
              AttrType::integer,
              AttrValue(std::int64_t{2}),
              false,
              {1, 64},
              "how many times each spatial entry repeats along each spatial axis"}};
  d.doc =
      "x [N, C, *spatial] with each spatial entry repeated scale times along every spatial axis "
      "(torch.nn.functional.interpolate, nearest, an integer scale_factor). Read in place by the "
      "kernel that consumes it, at each coordinate divided by scale, whatever x's strides "
      "(NCHW or channels_last); no upsampled copy.";
  d.dtypes = "x of any dtype; the result has its dtype.";
  return {d};
}

}  // namespace kiln::ops
