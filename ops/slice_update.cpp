// slice_update: src written into dst[..., start:start+len, ...] along one axis, in dst's own
// memory (a KV cache's append). Its result is dst's memory (FusionRoles::in_place): the kernel
// writes only the window, and whatever reads the result reads dst's memory after the write. The
// start is an attribute, or a one-element i32/i64 tensor read on the GPU (a replay with a new
// start needs no new kernel), checked there: a start that leaves no room for src writes nothing
// and the run raises an ArgumentError naming the op. Computed by the update family
// (engine/families/update/).
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

TensorView infer_update(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const std::string what = describe_args(op, args);
  const auto* dst = std::get_if<TensorView>(&args[0]);
  const auto* src = std::get_if<TensorView>(&args[1]);
  if (!dst || !src) throw ArgumentError(fmt::format("{}: dst and src must be tensors", what));
  if (is_integer(dst->dtype) != is_integer(src->dtype) ||
      (dst->dtype == DType::boolean) != (src->dtype == DType::boolean))
    throw DtypeError(fmt::format("{}: src's dtype {} cannot be written into dst's {} (cast it)",
                                 what, name_of(src->dtype), name_of(dst->dtype)));
  const std::int64_t rank = std::int64_t(dst->shape.size());
  const std::int64_t a = attrs.integer("axis").value_or(-1);
  if (rank == 0 || a < -rank || a >= rank)
    throw ShapeError(fmt::format("{}: axis {} is out of range for dst of rank {}", what, a, rank));
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  if (src->shape.size() != dst->shape.size())
    throw ShapeError(fmt::format("{}: src must have dst's rank ({})", what, rank));
  for (std::size_t d = 0; d < dst->shape.size(); ++d)
    if (d != axis && src->shape[d] != dst->shape[d])
      throw ShapeError(fmt::format("{}: src's dim {} ({}) differs from dst's ({})", what, d,
                                   src->shape[d], dst->shape[d]));
  const std::int64_t extent = dst->shape[axis], len = src->shape[axis];
  if (len > extent)
    throw ShapeError(fmt::format("{}: src's {} entries along axis {} do not fit dst's {}", what,
                                 len, a, extent));
  if (args.size() > 2) {
    const auto* start = std::get_if<TensorView>(&args[2]);
    if (!start || numel_of(start->shape) != 1 || !is_integer(start->dtype))
      throw ArgumentError(fmt::format("{}: pos must be a one-element i32 or i64 tensor", what));
  } else {
    const std::int64_t s = attrs.integer("start").value_or(0);
    const std::int64_t at = s < 0 ? s + extent : s;
    if (at < 0 || at + len > extent)
      throw ShapeError(
          fmt::format("{}: start {} leaves no room for src's {} entries in axis {} "
                      "of extent {}",
                      what, s, len, a, extent));
  }
  TensorView r;
  r.shape = dst->shape;
  r.dtype = dst->dtype;
  return r;
}

}  // namespace

std::vector<OpDef> update_ops() {
  OpDef d;
  d.name = "slice_update";
  d.operands = {"dst", "src", "pos"};  // pos: the start as a tensor (start is the attribute)
  d.min_operands = 2;
  d.fusion = {FusionKind::anchor, "update", /*prologue=*/false, /*epilogue=*/false};
  d.fusion.in_place = true;
  d.infer = infer_update;
  d.attrs = {{"axis",
              AttrType::integer,
              AttrValue(std::int64_t{-1}),
              false,
              {},
              "the axis src's window lies along (from the end if negative)"},
             {"start",
              AttrType::integer,
              AttrValue(std::int64_t{0}),
              false,
              {},
              "where the window starts along axis (from the end if negative), when no pos "
              "tensor is given"}};
  d.doc =
      "dst with src written over dst[..., start:start+len, ...] along axis, in dst's own memory "
      "(a KV cache's append): the result is dst, updated in place. start is an attribute, or pos "
      "a one-element i32/i64 tensor holding it, read on the GPU.";
  d.dtypes =
      "src of dst's kind (a float for a float, an integer for an integer), rounded to dst's "
      "dtype; pos i32 or i64; the result has dst's dtype.";
  return {d};
}

}  // namespace kiln::ops
