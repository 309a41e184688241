// The row families: a row op (reduction, softmax, norm) with its fused prologue and epilogue,
// along the last axis or every element (rows, kernel_templates/kiln/rows.cuh) or along another
// axis (columns, kernel_templates/kiln/columns.cuh). Their specialization is
// engine/families/rows/rows.*.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/family.hpp"
#include "engine/families/rows/row_buckets.hpp"
#include "engine/families/rows/row_templates.hpp"
#include "engine/families/rows/rows.hpp"

namespace kiln {

namespace autotune {

Space rows_space(long long row_groups, int vec, const Candidate& fallback, bool clusters) {
  Space s;
  s.tunables =
      codegen::space_tunables(row_tunable_table(), kRowTemplate | (clusters ? kRowClusters : 0));
  s.fallback = fallback;
  if (!clusters) s.fallback.erase("split");
  s.reject = [row_groups, vec, clusters](const Candidate& c,
                                         const DeviceLimits& limits) -> std::string {
    if (std::string why = block_too_large(c, limits); !why.empty()) return why;
    const int block = c.at("block");
    const auto split = c.find("split"), pack = c.find("pack");
    return reject_row_tunables({block, c.at("items"), 0, split == c.end() ? 1 : split->second,
                                pack == c.end() ? 1 : pack->second},
                               row_groups, vec, clusters);
  };
  return s;
}

Space columns_space(const Candidate& fallback) {
  Space s;
  s.tunables = codegen::space_tunables(row_tunable_table(), kColumnTemplate);
  s.fallback = fallback;
  s.reject = [](const Candidate& c, const DeviceLimits& limits) -> std::string {
    if (std::string why = block_too_large(c, limits); !why.empty()) return why;
    const int block = c.at("block"), cols = c.at("cols");
    return cols > block / 2
               ? fmt::format("{} column groups for {} threads: fewer than 2 threads per column",
                             cols, block)
               : "";
  };
  return s;
}
}  // namespace autotune

namespace {

// Whether `grp`'s anchor is a row op, and if so whether it runs along columns.
// A row op of a float x (an integer x's reductions are the arg family's: exact, not f32).
bool row_anchor(const FusedGroup& grp, const Graph& shapes) {
  return grp.anchor && grp.anchor->fusion.family == "rows" && !is_integer(shapes.node(grp.x).dtype);
}
bool on_columns(const FusedGroup& grp, const Graph& shapes) {
  const Attrs& attrs = shapes.node(grp.anchor_node).attrs;
  const Shape& x = shapes.node(grp.x).shape;
  const std::vector<std::int64_t> axes = ops::reduce_axes(attrs, std::int64_t(x.size()));
  return along_columns(axes.empty() ? -1 : axes.back(), ops::all_axes(attrs), x);
}

// Whether the row length of `w` is a dynamic dim of the plan, and if so which of the kernel's
// slots run along the row (RowKernel::dynamic_row, along_row).
void mark_dynamic_row(const GroupWork& w, RowKernel& k) {
  const FusedGroup& grp = w.group;
  const Shape& x = w.planned.node(grp.x).shape;
  const std::int64_t rank = std::int64_t(x.size());
  const std::int64_t axis = k.axis < 0 ? k.axis + rank : k.axis;
  // A run of several axes takes the kernel of its lengths, not a bucket's.
  if (k.all_axes || k.axes > 1 || axis < 0 || axis >= rank || x[std::size_t(axis)] >= 0) return;
  k.dynamic_row = true;
  for (int id : grp.pointer_nodes()) {
    if (id == FusedGroup::kStatusNode) continue;  // never: gathers along a dynamic row copy
    const Shape& s = w.planned.node(id).shape;
    const std::int64_t d = axis - (rank - std::int64_t(s.size()));
    const bool output = k.along_row.size() < grp.outputs.size();
    k.along_row.push_back(output ? !k.op->reduces
                                 : d >= 0 && d < std::int64_t(s.size()) && s[std::size_t(d)] != 1);
  }
}

// The bodies and operands of `w`'s row kernel, for either template.
RowKernel row_kernel(const GroupWork& w) {
  const FusedGroup& grp = w.group;
  RowKernel k;
  k.op = grp.anchor;
  k.prologue = grp.body;
  k.epilogue = grp.epilogue;
  k.outputs = w.views(grp.outputs);
  k.inputs = w.views(grp.inputs);
  k.extras = w.views(grp.extras);
  k.epilogue_inputs = w.views(grp.epilogue_inputs);
  k.scalars = grp.scalars;
  k.epilogue_scalars = grp.epilogue_scalars;
  const Attrs& attrs = w.shapes.node(grp.anchor_node).attrs;
  k.eps = ops::row_scalar(*k.op, attrs);
  k.groups = attrs.has("groups") ? *attrs.integer("groups") : 0;  // group_norm
  k.all_axes = ops::all_axes(attrs);
  k.axis = ops::axis_of(attrs);
  if (const AttrValue* a = attrs.find("axis");
      a && std::holds_alternative<std::vector<std::int64_t>>(*a)) {  // a run of axes, from 0
    const std::vector<std::int64_t> axes =
        ops::reduce_axes(attrs, std::int64_t(w.shapes.node(grp.x).shape.size()));
    k.axis = axes.back();
    k.axes = int(axes.size());
  }
  k.clusters = has_clusters(w.target.arch);
  k.max_shared = w.target.max_shared;
  mark_dynamic_row(w, k);
  std::vector<TensorView> all = k.outputs;
  for (const auto* list : {&k.inputs, &k.extras, &k.epilogue_inputs})
    all.insert(all.end(), list->begin(), list->end());
  k.gathers = gather_slots(w, all, k.outputs.size());
  return k;
}

class RowsFamily final : public Family {
 public:
  std::string_view name() const override { return "rows"; }
  bool claims(const FusedGroup& grp, const Graph& shapes) const override {
    return row_anchor(grp, shapes) && !on_columns(grp, shapes);
  }
  // A group_norm over a channels_last x also runs as one cooperative launch (group_rows.cpp)
  // where a tuning record says `grouped`.
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const std::string& stem = w.group.stem;
    const RowKernel k = row_kernel(w);
    const Shape& shape = w.shapes.node(w.group.x).shape;
    const RowTunables rt = row_tunables(t, stem);
    if (rt.grouped == 0) return specialize_rows(k, stem, shape, rt);
    std::optional<KernelLaunch> L = specialize_group_rows(k, stem, shape, w.target.sms);
    if (!L)
      throw ArgumentError(fmt::format(
          "{}: grouped=1 runs a group_norm of a channels_last x whose images fit the GPU's "
          "registers at once; this one does not",
          stem));
    L->tunables = {{"grouped", 1}};
    return std::move(*L);
  }
  // group_norm's space has one candidate more: the cooperative kernel.
  autotune::Space space(const FusedGroup& grp, const KernelLaunch& base,
                        const Target& target) const override {
    autotune::Space s = autotune::rows_space(std::int64_t(kiln_index(base.layout)), base.vec,
                                             base.tunables, has_clusters(target.arch));
    if (grp.anchor->name != "group_norm") return s;
    s.tunables.push_back({"grouped", {0, 1}});
    s.fallback["grouped"] = 0;
    s.reject = [row = s.reject, fallback = s.fallback](const autotune::Candidate& c,
                                                       const autotune::DeviceLimits& limits) {
      if (c.at("grouped") == 0) return row(c, limits);
      autotune::Candidate as_default = c;
      as_default["grouped"] = 0;
      return as_default == fallback ? std::string() : std::string("grouped takes no others");
    };
    return s;
  }
  std::vector<std::string_view> headers() const override { return {"rows.cuh", "group_rows.cuh"}; }
  std::vector<std::int64_t> extent_probes() const override { return row_bucket_probes(); }
};

class ColumnsFamily final : public Family {
 public:
  std::string_view name() const override { return "columns"; }
  bool claims(const FusedGroup& grp, const Graph& shapes) const override {
    return row_anchor(grp, shapes) && on_columns(grp, shapes);
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const std::string& stem = w.group.stem;
    return specialize_columns(row_kernel(w), stem, w.shapes.node(w.group.x).shape,
                              row_tunables(t, stem));
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base, const Target&) const override {
    return autotune::columns_space(base.tunables);
  }
  std::vector<std::string_view> headers() const override { return {"columns.cuh"}; }
};

}  // namespace

const Family& rows_family() {
  static const RowsFamily family;
  return family;
}

const Family& columns_family() {
  static const ColumnsFamily family;
  return family;
}

}  // namespace kiln
