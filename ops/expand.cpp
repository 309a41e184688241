// expand and broadcast_to: x seen in a larger shape, its dims of extent 1 (and new leading
// dims) repeated by a stride of 0 (torch's). Every kernel that takes strides reads one in
// place, with no copy; a copy only where the view is an output or a kernel reading contiguous
// memory (a user's template) reads it (engine/passes/fusion.cpp, view_copies).
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

// The shape x of `x_shape` takes under attribute `shape` (-1: x's extent there): ShapeError
// naming `what` where a dim of x is neither 1 nor the extent asked for.
Shape expanded_shape(const Shape& x_shape, const Attrs& attrs, const std::string& what) {
  if (!attrs.has("shape")) throw ArgumentError(fmt::format("{}: needs attribute shape", what));
  const std::vector<std::int64_t> want = *attrs.extents("shape");
  if (want.size() < x_shape.size())
    throw ShapeError(fmt::format("{}: shape {} has fewer dims than x ({})", what, to_string(want),
                                 x_shape.size()));
  const std::size_t lead = want.size() - x_shape.size();
  Shape out(want.begin(), want.end());
  for (std::size_t d = 0; d < want.size(); ++d) {
    if (want[d] < -1)
      throw ShapeError(
          fmt::format("{}: shape {} has extent {} (at least -1)", what, to_string(want), want[d]));
    if (d < lead) {
      if (want[d] == -1)
        throw ShapeError(fmt::format("{}: shape {} keeps (-1) dim {}, which x does not have", what,
                                     to_string(want), d));
      continue;
    }
    const std::int64_t have = x_shape[d - lead];
    if (want[d] == -1) out[d] = have;
    if (have != 1 && out[d] != have)
      throw ShapeError(
          fmt::format("{}: x's dim {} has extent {}, which expands to nothing but "
                      "itself (shape {})",
                      what, d - lead, have, to_string(want)));
  }
  numel_of(out);
  return out;
}

TensorView infer_expand(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const auto* x = std::get_if<TensorView>(&args[0]);
  if (!x) throw ArgumentError(fmt::format("{}: x must be a tensor", describe_args(op, args)));
  TensorView r;
  r.dtype = x->dtype;
  r.shape = expanded_shape(x->shape, attrs, describe_args(op, args));
  return r;
}

// x's memory in the result's shape: x's strides on its own dims, 0 on the repeated ones.
std::optional<TensorView> expanded_view(const TensorView& x, const Shape& result, const Attrs&) {
  const Shape st = x.resolved_strides();
  const std::size_t lead = result.size() - x.shape.size();
  TensorView v = x;
  v.shape = result;
  v.strides.assign(result.size(), 0);
  for (std::size_t d = lead; d < result.size(); ++d)
    if (x.shape[d - lead] == result[d]) v.strides[d] = st[d - lead];
  return v;
}

OpDef expand_op(std::string_view name, std::string_view doc) {
  OpDef d;
  d.name = name;
  d.operands = {"x"};
  d.fusion = {FusionKind::view};
  d.infer = infer_expand;
  d.view.in_place = ViewRule::InPlace::anywhere;
  d.view.of = expanded_view;
  d.dtypes = "x of any dtype; the result has its dtype.";
  d.attrs = {{"shape",
              AttrType::extents,
              std::nullopt,
              true,
              {},
              "the result's extents: x's dims aligned at the end, each 1 in x repeated to the "
              "extent given (-1: x's own), and new leading dims"}};
  d.doc = doc;
  return d;
}

}  // namespace

std::vector<OpDef> expand_ops() {
  return {expand_op("expand",
                    "x repeated along its dims of extent 1, and along new leading dims, to "
                    "shape (torch.Tensor.expand). A view of x's memory (a stride of 0) wherever "
                    "the kernels reading it take strides."),
          expand_op("broadcast_to",
                    "x broadcast to shape, as NumPy broadcasting would (torch.broadcast_to): "
                    "the same view as expand.")};
}

}  // namespace kiln::ops
