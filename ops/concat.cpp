// concat: its operands laid side by side along an axis (torch.cat). Its result is planned as
// one tensor whose windows its operands' kernels write (FusionRoles::parts): an operand
// computed by elementwise ops is computed straight into its window; one in memory already (a
// graph input, a row op's or a product's result, a view) is copied there. Computed by the
// concat family (engine/families/concat/).
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

TensorView infer_concat(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const std::string what = describe_args(op, args);
  std::vector<const TensorView*> xs;
  for (const Operand& a : args) {
    const auto* v = std::get_if<TensorView>(&a);
    if (!v) throw ArgumentError(fmt::format("{}: every operand must be a tensor", what));
    xs.push_back(v);
  }
  const TensorView& first = *xs[0];
  const std::int64_t rank = std::int64_t(first.shape.size());
  const std::int64_t a = attrs.integer("axis").value_or(0);
  if (rank == 0 || a < -rank || a >= rank)
    throw ShapeError(fmt::format("{}: axis {} is out of range for rank {}", what, a, rank));
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  TensorView r;
  r.shape = first.shape;
  r.dtype = first.dtype;
  r.shape[axis] = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const TensorView& x = *xs[i];
    if (x.dtype != first.dtype)
      throw DtypeError(
          fmt::format("{}: xs[{}] is {}, xs[0] {}: concatenated tensors share a "
                      "dtype (cast them)",
                      what, i, name_of(x.dtype), name_of(first.dtype)));
    if (x.shape.size() != first.shape.size())
      throw ShapeError(
          fmt::format("{}: xs[{}] has rank {}, xs[0] {}", what, i, x.shape.size(), rank));
    for (std::size_t d = 0; d < x.shape.size(); ++d)
      if (d != axis && x.shape[d] != first.shape[d])
        throw ShapeError(
            fmt::format("{}: xs[{}]'s dim {} ({}) differs from xs[0]'s ({}); only "
                        "axis {} may differ",
                        what, i, d, x.shape[d], first.shape[d], a));
    if (x.shape[axis] == kDynamicStandIn)
      throw ShapeError(fmt::format("{}: xs[{}] is dynamic along axis {}: concatenate along a "
                                   "static axis (a cache growing along a dynamic one takes "
                                   "slice_update)",
                                   what, i, a));
    r.shape[axis] += x.shape[axis];
  }
  return r;
}

}  // namespace

std::vector<OpDef> concat_ops() {
  OpDef d;
  d.name = "concat";
  d.operands = {"xs"};
  d.min_operands = 1;
  d.variadic = true;
  d.fusion = {FusionKind::anchor, "concat", /*prologue=*/false, /*epilogue=*/false};
  d.fusion.parts = true;
  d.fusion.gathers = true;  // a part reads a gather or remap view in place
  d.infer = infer_concat;
  d.attrs = {{"axis",
              AttrType::integer,
              AttrValue(std::int64_t{0}),
              false,
              {},
              "the axis the operands are laid along (from the end if negative)"}};
  d.doc =
      "The operands laid side by side along axis (torch.cat): every other dim equal. An "
      "operand computed by elementwise ops in the plan is computed straight into its part of the "
      "result; one in memory (a graph input, a row op's or a product's result, a view) is "
      "copied there.";
  d.dtypes = "every operand of one dtype, the result's.";
  return {d};
}

}  // namespace kiln::ops
