#include "engine/rows.hpp"

#include <fmt/format.h>

#include <kiln/error.hpp>

namespace kiln {

KernelLaunch specialize_rows(const ops::OpDef& op, const codegen::Body& prologue, const std::string& stem,
                             const Shape& shape, const TensorView& out, const std::vector<TensorView>& inputs,
                             const std::vector<TensorView>& extras, std::vector<float> scalars, double eps) {
  if (shape.empty()) throw ShapeError(fmt::format("{}: a row op needs at least one axis", stem));
  if (prologue.results.size() != 1 || prologue.inputs.size() != inputs.size() || int(scalars.size()) != prologue.scalars)
    throw ArgumentError(fmt::format("{}: the prologue does not match its inputs and scalars", stem));
  // A reduction's output, seen as [rows..., 1], broadcasts over the row.
  TensorView o = out;
  if (op.reduces) {
    Shape want = shape;
    want.back() = 1;
    Shape strides = out.resolved_strides();
    if (out.shape.size() + 1 == shape.size()) {
      o.shape.push_back(1);
      strides.push_back(1);
    }
    if (o.shape != want) throw ShapeError(fmt::format("{}: output {} does not fit rows of {}", stem, out.describe(), to_string(shape)));
    o.strides = strides;
  } else if (out.shape != shape) {
    throw ShapeError(fmt::format("{}: output {} is not of shape {}", stem, out.describe(), to_string(shape)));
  }
  std::vector<const TensorView*> views = {&o};
  for (const TensorView& v : inputs) views.push_back(&v);
  for (const TensorView& v : extras) views.push_back(&v);
  const LayoutPlan lp = plan_layout(views, 1, shape, true, 0);
  const std::int64_t per_row = lp.dims.back().extent;
  int block = 32;
  while (block < 512 && block * 2 <= per_row) block *= 2;

  std::vector<std::string_view> extra_types;
  for (const TensorView& v : extras) extra_types.push_back(device_type_of(v.dtype));
  KernelLaunch L;
  L.index64 = lp.index64;
  L.vec = lp.vec;
  L.spec.source = "#include <kiln/rows.cuh>\n\n" + codegen::render_body(prologue);
  L.spec.expression = fmt::format("kiln::rows<kiln_body, {}, {}, kiln::Types<{}>, {}, {}, {}, {}>", op.functor,
                                  device_type_of(out.dtype), fmt::join(extra_types, ", "), lp.type(), lp.vec,
                                  lp.index64 ? "unsigned long long" : "unsigned int", block);
  L.spec.options = {"-std=c++17"};
  L.spec.name = fmt::format("{}__r{}v{}{}", stem, lp.dims.size(), lp.vec, lp.index64 ? "_i64" : "");
  L.groups = std::uint64_t(lp.groups);
  L.index_arg = std::uint64_t(per_row);
  L.block = unsigned(block);
  L.grid = per_row ? unsigned(lp.groups / per_row) : 0;
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.scalars = std::move(scalars);
  L.scalars.push_back(float(eps));
  return L;
}

}  // namespace kiln
