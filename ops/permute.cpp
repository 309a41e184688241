// permute and transpose: views of their operand's memory with its dims reordered (torch's).
// Every kernel that takes strides (elementwise chains, row ops, a product's operands) reads one
// in place; a copy only where the view is an output or a kernel reading contiguous memory (a
// user's template) reads it (engine/passes/fusion.cpp, view_copies).
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <numeric>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

// The permutation op `name` applies to x of rank `rank`, from permute's dims or transpose's
// dim0 and dim1 (negative dims count from the end); ShapeError naming `what` if it is none.
std::vector<std::size_t> order_of(std::string_view name, std::size_t rank, const Attrs& attrs,
                                  const std::string& what) {
  const std::int64_t r = std::int64_t(rank);
  auto dim = [&](std::int64_t d) {
    if (d < -r || d >= r)
      throw ShapeError(fmt::format("{}: dim {} is out of range for rank {}", what, d, r));
    return std::size_t(d < 0 ? d + r : d);
  };
  std::vector<std::size_t> order(rank);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (name == "transpose") {
    const std::size_t a = dim(attrs.integer("dim0").value_or(0));
    const std::size_t b = dim(attrs.integer("dim1").value_or(1));
    std::swap(order[a], order[b]);
    return order;
  }
  if (!attrs.has("dims")) throw ArgumentError(fmt::format("{}: needs attribute dims", what));
  const std::vector<std::int64_t> dims = *attrs.extents("dims");
  if (dims.size() != rank)
    throw ShapeError(fmt::format("{}: dims {} has {} entries; x has {} dims", what, to_string(dims),
                                 dims.size(), rank));
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; i < rank; ++i) {
    order[i] = dim(dims[i]);
    if (seen[order[i]])
      throw ShapeError(
          fmt::format("{}: dims {} names dim {} twice; it must be a permutation of "
                      "0..{}",
                      what, to_string(dims), order[i], rank - 1));
    seen[order[i]] = true;
  }
  return order;
}

TensorView infer_permute(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const auto* x = std::get_if<TensorView>(&args[0]);
  if (!x) throw ArgumentError(fmt::format("{}: x must be a tensor", describe_args(op, args)));
  numel_of(x->shape);
  if (op.name == "transpose" && x->shape.empty())
    throw ShapeError(fmt::format("{}: x has no dims to swap", describe_args(op, args)));
  const auto order = order_of(op.name, x->shape.size(), attrs, describe_args(op, args));
  TensorView r;
  r.dtype = x->dtype;
  for (std::size_t d : order) r.shape.push_back(x->shape[d]);
  return r;
}

// x's memory seen through op `name`'s permutation: the same data, its dims and strides
// reordered.
std::optional<TensorView> permuted_view(std::string_view name, const TensorView& x,
                                        const Attrs& attrs) {
  const Shape st = x.resolved_strides();
  TensorView v = x;
  v.shape.clear();
  v.strides.clear();
  for (std::size_t d : order_of(name, x.shape.size(), attrs, std::string(name))) {
    v.shape.push_back(x.shape[d]);
    v.strides.push_back(st[d]);
  }
  return v;
}

}  // namespace

std::vector<OpDef> permute_ops() {
  OpDef permute;
  permute.name = "permute";
  permute.operands = {"x"};
  permute.fusion = {FusionKind::view};
  permute.infer = infer_permute;
  permute.view.in_place = ViewRule::InPlace::anywhere;
  permute.view.of = [](const TensorView& x, const Shape&, const Attrs& attrs) {
    return permuted_view("permute", x, attrs);
  };
  permute.dtypes = "x of any dtype; the result has its dtype.";
  OpDef transpose = permute;
  permute.attrs = {{"dims",
                    AttrType::extents,
                    std::nullopt,
                    true,
                    {},
                    "the order of x's dims in the result: a permutation of 0..rank-1 (negative "
                    "ones count from the end)"}};
  permute.doc =
      "x with its dims reordered: result dim i is x's dim dims[i] (torch.permute). A "
      "view of x's memory wherever the kernels reading it take strides.";
  transpose.name = "transpose";
  transpose.attrs = {
      {"dim0",
       AttrType::integer,
       AttrValue(std::int64_t{0}),
       false,
       {},
       "one dim to swap (from the end if negative)"},
      {"dim1",
       AttrType::integer,
       AttrValue(std::int64_t{1}),
       false,
       {},
       "the other dim to swap (from the end if negative)"},
  };
  transpose.view.of = [](const TensorView& x, const Shape&, const Attrs& attrs) {
    return permuted_view("transpose", x, attrs);
  };
  transpose.doc =
      "x with dims dim0 and dim1 swapped (torch.transpose). A view of x's memory "
      "wherever the kernels reading it take strides.";
  return {permute, transpose};
}

}  // namespace kiln::ops
