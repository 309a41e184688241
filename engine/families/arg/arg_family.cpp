// The arg family: argmax and argmin along one axis with their fused prologue, and the integer
// reductions (sum, min, max of an i32 or i64 x, exact: the rows family's are f32), along an axis
// or over every element (kernel_templates/kiln/arg.cuh), one block per row, the axis last in the
// layout.
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/codegen/layout.hpp"
#include "engine/codegen/tunable_table.hpp"
#include "engine/families/family.hpp"
#include "engine/families/gathers.hpp"

namespace kiln {
namespace {

// The template's parameters (arg.cuh's arg_rows); block and items are its tunables.
struct ArgTemplate {
  static constexpr std::string_view kHeader = "arg.cuh";
  std::string layout;
  int vec = 1;
  bool index64 = false;
  std::string kernel = "kiln::arg_rows";
  std::string op;   ///< arg_rows: "true" for argmin; int_rows: "0, long long" (sum into i64), ...
  int block = 256;  ///< threads per block (one row each)
  int items = 4;    ///< groups a thread loads before it compares
  std::int64_t groups = 1;  ///< groups per row

  std::string expression() const {
    return codegen::render_instance(
        kernel, {"kiln_body", op, layout, std::to_string(vec), codegen::render_index(index64),
                 std::to_string(block), std::to_string(items), std::to_string(groups)});
  }
};

const codegen::TunableTable<ArgTemplate>& arg_tunable_table() {
  static const codegen::TunableTable<ArgTemplate> table = {
      {"block", &ArgTemplate::block, {64, 128, 256, 512, 1024}},
      {"items", &ArgTemplate::items, {1, 2, 4, 8}},
  };
  return table;
}

// The result seen with the axis kept (extent 1) where keepdim left it out.
TensorView kept(TensorView out, std::size_t axis, bool keepdim) {
  if (keepdim) return out;
  out.strides = out.resolved_strides();
  out.shape.insert(out.shape.begin() + std::ptrdiff_t(axis), 1);
  out.strides.insert(out.strides.begin() + std::ptrdiff_t(axis), 0);
  return out;
}

// Whether `grp` is an integer reduction (a rows op of an integer x).
bool integer_reduction(const FusedGroup& grp, const Graph& shapes) {
  return grp.anchor && grp.anchor->fusion.family == "rows" && grp.anchor->reduces &&
         is_integer(shapes.node(grp.x).dtype);
}

// The kernel and its op argument for `grp`.
std::pair<std::string, std::string> template_of(const FusedGroup& grp, const Graph& shapes) {
  const std::string_view name = grp.anchor->name;
  if (!integer_reduction(grp, shapes))
    return {"kiln::arg_rows", name == "argmin" ? "true" : "false"};
  const DType out = shapes.node(grp.anchor_node).dtype;
  return {"kiln::int_rows", fmt::format("{}, {}",
                                        name == "sum"   ? 0
                                        : name == "min" ? 1
                                                        : 2,
                                        device_type_of(out))};
}

KernelLaunch specialize_arg(const GroupWork& w, const Tunables& t) {
  const FusedGroup& grp = w.group;
  const Attrs& attrs = w.shapes.node(grp.anchor_node).attrs;
  Shape shape = w.shapes.node(grp.x).shape;
  const bool all = ops::all_axes(attrs);
  const std::int64_t rank = std::int64_t(shape.size());
  const std::int64_t a = all ? 0 : ops::reduce_axes(attrs, rank).front();  // one (infer_exact)
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  const TensorView& out = w.values.at(std::size_t(grp.outputs[0]));
  std::vector<TensorView> own = {
      all ? out : axis_last(kept(out, axis, attrs.flag("keepdim")), shape, axis, "output")};
  for (const TensorView& v : w.views(grp.inputs))
    own.push_back(all ? v : axis_last(v, shape, axis, "input"));
  if (!all)
    std::rotate(shape.begin() + std::ptrdiff_t(axis), shape.begin() + std::ptrdiff_t(axis) + 1,
                shape.end());
  GatherSlots gathers = gather_slots(w, own, 1);
  for (TensorView& v : gathers.indices)  // seen as the inputs are: the axis last
    if (!all) v = axis_last(v, w.shapes.node(grp.x).shape, axis, "input");
  std::vector<const TensorView*> views;
  for (const TensorView& v : own) views.push_back(&v);
  std::vector<bool> reduced(shape.size(), all);
  if (!shape.empty()) reduced.back() = true;
  const LayoutPlan lp = gathers.plan(views, 1, shape, !all, 0, reduced);

  ArgTemplate tp;
  tp.layout = gathers.layout_type(lp, own.size());
  tp.vec = lp.vec, tp.index64 = lp.index64;
  std::tie(tp.kernel, tp.op) = template_of(grp, w.shapes);
  tp.groups = all ? lp.groups : lp.dims.back().extent;
  while (tp.block > 32 && std::int64_t(tp.block / 2) * tp.items >= tp.groups) tp.block /= 2;
  const ArgTemplate fallback = tp;
  tp = codegen::parse_tunables(arg_tunable_table(), t, tp, grp.stem, "arg template");
  if (tp.block < 32 || tp.block > 1024 || tp.block % 32 != 0 || tp.items < 1 || tp.items > 16)
    throw ArgumentError(
        fmt::format("{}: block {} items {}: the arg template takes 32 to 1024 "
                    "threads (whole warps) and 1 to 16 items",
                    grp.stem, tp.block, tp.items));
  KernelLaunch L;
  L.vec = lp.vec;
  L.groups = std::uint64_t(lp.groups);
  L.tunables = codegen::launch_tunables(arg_tunable_table(), tp, ~0u);
  L.config.block[0] = unsigned(tp.block);
  const std::uint64_t rows = tp.groups ? std::uint64_t(lp.groups / tp.groups) : 0;
  L.config.grid[0] = grid_x(rows, [&] { return fmt::format("{}: {} rows", grp.stem, rows); });
  L.spec.source = codegen::render_source(tp.kHeader, {{"kiln_body", &grp.body}});
  L.spec.expression = tp.expression();
  L.spec.options = codegen::builtin_options();
  const bool tuned = tp.block != fallback.block || tp.items != fallback.items;
  L.spec.name = fmt::format(
      "{}__{}{}v{}{}{}", grp.stem, integer_reduction(grp, w.shapes) ? "int" : "arg", lp.dims.size(),
      lp.vec, lp.index64 ? "_i64" : "", tuned ? fmt::format("_b{}i{}", tp.block, tp.items) : "");
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.scalars = grp.scalars;
  L.layout = kiln_layout(L.pointers, L.scalars, std::uint64_t(tp.groups), lp.index64);
  return L;
}

class ArgFamily final : public Family {
 public:
  std::string_view name() const override { return "arg"; }
  bool claims(const FusedGroup& grp, const Graph& shapes) const override {
    return (grp.anchor && grp.anchor->fusion.family == name()) || integer_reduction(grp, shapes);
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    return specialize_arg(w, t);
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base, const Target&) const override {
    autotune::Space s;
    s.tunables = codegen::space_tunables(arg_tunable_table(), ~0u);
    s.fallback = base.tunables;
    s.reject = autotune::block_too_large;
    return s;
  }
  std::vector<std::string_view> headers() const override { return {"arg.cuh"}; }
};

}  // namespace

const Family& arg_family() {
  static const ArgFamily family;
  return family;
}

}  // namespace kiln
