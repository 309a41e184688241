// gather, index_select and embedding: x read at the indices an integer tensor holds along one
// axis. Each is a view (ViewRule::axis, index_view): the kernel that consumes it reads x in place
// at the indices (kernel_templates/kiln/gather.cuh), so an elementwise consumer or a row op's
// prologue reads the table rows straight from the table; a copy only where the view is an output
// or a kernel that does not gather reads it (engine/passes/fusion.cpp). An index outside x's axis
// reads nothing outside x and is reported after the run as an ArgumentError naming the op.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

const TensorView& tensor(const OpDef& op, const std::vector<Operand>& args, std::size_t i) {
  const auto* v = std::get_if<TensorView>(&args.at(i));
  if (!v)
    throw ArgumentError(
        fmt::format("{}: {} must be a tensor", describe_args(op, args), op.operands[i]));
  return *v;
}

const TensorView& index_operand(const OpDef& op, const std::vector<Operand>& args) {
  const TensorView& i = tensor(op, args, 1);
  if (i.dtype != DType::i32 && i.dtype != DType::i64)
    throw DtypeError(fmt::format("{}: {} must be i32 or i64, not {}", describe_args(op, args),
                                 op.operands[1], name_of(i.dtype)));
  return i;
}

// Attribute axis of x (rank `rank`), from 0: ShapeError naming the call outside [-rank, rank).
std::size_t axis_in(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs,
                    std::size_t rank) {
  const std::int64_t a = attrs.integer("axis").value_or(0), r = std::int64_t(rank);
  if (r == 0 || a < -r || a >= r)
    throw ShapeError(fmt::format("{}: axis {} is out of range for x of rank {}",
                                 describe_args(op, args), a, rank));
  return std::size_t(a < 0 ? a + r : a);
}

std::size_t attr_axis(const Shape& x, const Attrs& attrs) {
  const std::int64_t a = attrs.integer("axis").value_or(0);
  return std::size_t(a < 0 ? a + std::int64_t(x.size()) : a);
}
std::size_t table_axis(const Shape&, const Attrs&) { return 0; }

TensorView result_of(const TensorView& x, Shape shape) {
  numel_of(shape);
  TensorView r;
  r.shape = std::move(shape);
  r.dtype = x.dtype;
  return r;
}

TensorView infer_gather(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const TensorView& x = tensor(op, args, 0);
  const TensorView& index = index_operand(op, args);
  const std::size_t axis = axis_in(op, args, attrs, x.shape.size());
  if (index.shape.size() != x.shape.size())
    throw ShapeError(fmt::format("{}: index must have x's rank ({}), not {}",
                                 describe_args(op, args), x.shape.size(), index.shape.size()));
  for (std::size_t d = 0; d < x.shape.size(); ++d)
    if (d != axis && index.shape[d] > x.shape[d])
      throw ShapeError(fmt::format("{}: index's dim {} ({}) is longer than x's ({})",
                                   describe_args(op, args), d, index.shape[d], x.shape[d]));
  return result_of(x, index.shape);
}

TensorView infer_index_select(const OpDef& op, const std::vector<Operand>& args,
                              const Attrs& attrs) {
  const TensorView& x = tensor(op, args, 0);
  const TensorView& index = index_operand(op, args);
  const std::size_t axis = axis_in(op, args, attrs, x.shape.size());
  if (index.shape.size() != 1)
    throw ShapeError(fmt::format("{}: index must have one dim, not {}", describe_args(op, args),
                                 index.shape.size()));
  Shape s = x.shape;
  s[axis] = index.shape[0];
  return result_of(x, s);
}

TensorView infer_embedding(const OpDef& op, const std::vector<Operand>& args, const Attrs&) {
  const TensorView& weight = tensor(op, args, 0);
  const TensorView& ids = index_operand(op, args);
  if (weight.shape.size() != 2)
    throw ShapeError(fmt::format("{}: weight must be a table [rows, dim], not of rank {}",
                                 describe_args(op, args), weight.shape.size()));
  Shape s = ids.shape;
  s.push_back(weight.shape[1]);
  return result_of(weight, s);
}

// x over the result's shape: x's strides, 0 along the indexed axis (its entry comes from the
// index).
std::optional<TensorView> along_axis(const TensorView& x, const Shape& result, const Attrs& attrs) {
  TensorView v = x;
  v.strides = x.resolved_strides();
  v.strides[attr_axis(x.shape, attrs)] = 0;
  v.shape = result;
  return v;
}
std::optional<TensorView> table_rows(const TensorView& w, const Shape& result, const Attrs&) {
  TensorView v = w;
  v.strides.assign(result.size(), 0);
  v.strides.back() = w.resolved_strides()[1];
  v.shape = result;
  return v;
}

TensorView same_index(const TensorView& index, const Shape&, const Attrs&) { return index; }
TensorView index_along(const TensorView& index, const Shape& result, const Attrs& attrs) {
  TensorView v = index;
  v.strides.assign(result.size(), 0);
  v.strides[attr_axis(result, attrs)] = index.resolved_strides()[0];
  v.shape = result;
  return v;
}
TensorView ids_per_row(const TensorView& ids, const Shape& result, const Attrs&) {
  TensorView v = ids;
  v.strides = ids.resolved_strides();
  v.strides.push_back(0);
  v.shape = result;
  return v;
}

OpDef gather_op(std::string_view name, std::vector<std::string_view> operands, InferRule infer) {
  OpDef d;
  d.name = name;
  d.operands = std::move(operands);
  d.fusion = {FusionKind::view};
  d.infer = infer;
  d.view.in_place = ViewRule::InPlace::anywhere;
  d.view.axis = attr_axis;
  return d;
}

const AttrSpec kAxis = {"axis",
                        AttrType::integer,
                        AttrValue(std::int64_t{0}),
                        false,
                        {},
                        "the axis of x the indices pick along (from the end if negative)"};

}  // namespace

std::vector<OpDef> gather_ops() {
  OpDef g = gather_op("gather", {"x", "index"}, infer_gather);
  g.view.of = along_axis;
  g.view.index_view = same_index;
  g.attrs = {kAxis};
  g.doc =
      "x's entries picked along axis by index (torch.gather): out[i][j][k] = "
      "x[index[i][j][k]][j][k] "
      "for axis 0; index has x's rank and, off the axis, dims no longer than x's.";
  g.dtypes = "x of any dtype, index i32 or i64; the result has x's dtype.";

  OpDef s = gather_op("index_select", {"x", "index"}, infer_index_select);
  s.view.of = along_axis;
  s.view.index_view = index_along;
  s.attrs = {kAxis};
  s.doc =
      "x's slices along axis at the positions a 1-D index lists, in its order "
      "(torch.index_select): the result has x's shape with len(index) along axis.";
  s.dtypes = g.dtypes;

  OpDef e = gather_op("embedding", {"weight", "ids"}, infer_embedding);
  e.view.of = table_rows;
  e.view.axis = table_axis;
  e.view.index_view = ids_per_row;
  e.doc =
      "The rows of a table weight [rows, dim] that ids picks (torch.nn.functional.embedding): the "
      "result is ids' shape plus dim.";
  e.dtypes = "weight of any dtype, ids i32 or i64; the result has weight's dtype.";
  return {g, s, e};
}

}  // namespace kiln::ops
