// pad: x with constant margins (torch.nn.functional.pad, mode "constant"). A remap view
// (ViewRule::remap): the kernel that consumes it reads x in place, each element at its
// coordinate less the leading margin, and the value where that lies outside x (predicated
// loads, kernel_templates/kiln/gather.cuh); a copy only where the view is an output or a kernel
// that cannot read it so (engine/passes/fusion.cpp). A negative margin crops, as torch's does.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

constexpr std::int64_t kMostPad = std::int64_t(1) << 40;  // so that extents never overflow

// The margins of `attrs` per axis of a rank-`rank` x: (lo, hi), torch's order (the last axis's
// pair first), ArgumentError naming `what` for an odd count or more pairs than axes.
std::vector<std::pair<std::int64_t, std::int64_t>> margins(const Attrs& attrs, std::size_t rank,
                                                           const std::string& what) {
  if (!attrs.has("pads")) throw ArgumentError(fmt::format("{}: needs attribute pads", what));
  const std::vector<std::int64_t> pads = *attrs.extents("pads");
  if (pads.size() % 2 != 0 || pads.size() > 2 * rank)
    throw ArgumentError(fmt::format(
        "{}: pads {} must be pairs (before, after), the last axis's first, for at most the {} "
        "axes of x",
        what, to_string(pads), rank));
  for (std::int64_t p : pads)
    if (p < -kMostPad || p > kMostPad)
      throw ShapeError(fmt::format("{}: pads {}: a margin of {} is beyond +-2^40", what,
                                   to_string(pads), p));
  std::vector<std::pair<std::int64_t, std::int64_t>> out(rank, {0, 0});
  for (std::size_t k = 0; k < pads.size() / 2; ++k)
    out[rank - 1 - k] = {pads[2 * k], pads[2 * k + 1]};
  return out;
}

TensorView infer_pad(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const auto* x = std::get_if<TensorView>(&args.at(0));
  const std::string what = describe_args(op, args);
  if (!x) throw ArgumentError(fmt::format("{}: x must be a tensor", what));
  const auto m = margins(attrs, x->shape.size(), what);
  TensorView r;
  r.dtype = x->dtype;
  r.shape = x->shape;
  for (std::size_t d = 0; d < r.shape.size(); ++d) {
    if (m[d] == std::pair<std::int64_t, std::int64_t>{0, 0}) continue;
    if (x->shape[d] == kDynamicStandIn)
      throw ShapeError(fmt::format("{}: x is dynamic along axis {}, which pads would widen: pad "
                                   "static axes",
                                   what, d));
    r.shape[d] = x->shape[d] + m[d].first + m[d].second;
    if (r.shape[d] < 0)
      throw ShapeError(fmt::format("{}: pads ({}, {}) crop axis {} of extent {} below nothing",
                                   what, m[d].first, m[d].second, d, x->shape[d]));
  }
  numel_of(r.shape);
  return r;
}

// x over the result's shape: its strides, 0 along the padded axes (remap gives the entry).
std::optional<TensorView> padded_view(const TensorView& x, const Shape& result,
                                      const Attrs& attrs) {
  const auto m = margins(attrs, x.shape.size(), "pad");
  TensorView v = x;
  v.strides = x.resolved_strides();
  for (std::size_t d = 0; d < m.size(); ++d)
    if (m[d] != std::pair<std::int64_t, std::int64_t>{0, 0}) v.strides[d] = 0;
  v.shape = result;
  return v;
}

Remap pad_remap(const Shape& x, const Attrs& attrs) {
  const auto m = margins(attrs, x.size(), "pad");
  Remap r;
  r.fill = attrs.number("value").value_or(0.0);
  for (std::size_t d = 0; d < m.size(); ++d)
    if (m[d] != std::pair<std::int64_t, std::int64_t>{0, 0}) r.axes.push_back({d, m[d].first, 1});
  return r;
}

}  // namespace

std::vector<OpDef> pad_ops() {
  OpDef d;
  d.name = "pad";
  d.operands = {"x"};
  d.fusion = {FusionKind::view};
  d.infer = infer_pad;
  d.view.in_place = ViewRule::InPlace::anywhere;
  d.view.of = padded_view;
  d.view.remap = pad_remap;
  d.attrs = {{"pads",
              AttrType::extents,
              std::nullopt,
              true,
              {},
              "margins (before, after) per axis, the last axis's pair first, as torch's pad takes "
              "them; a negative margin crops"},
             {"value", AttrType::number, AttrValue(0.0), false, {}, "the margins' value"}};
  d.doc =
      "x with constant margins (torch.nn.functional.pad, constant mode). Read in place by the "
      "kernel that consumes it: each element at its coordinate less the leading margin, value "
      "outside x; no padded copy.";
  d.dtypes = "x of any dtype; the result has its dtype (value converted to it).";
  return {d};
}

}  // namespace kiln::ops
