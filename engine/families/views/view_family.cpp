// The view family: a view that is not read in its operand's memory (engine/passes/fusion.hpp) is a
// copy with the elementwise template: the operand read through the view its rule gives of it
// (ops::ViewRule::of: a slice's starts at its range), or, for a view in row-major order (a
// reshape), the result written in the operand's shape. Views read in place, and slices a
// product's kernel writes, have no kernel.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/elementwise/elementwise.hpp"
#include "engine/families/family.hpp"

namespace kiln {
namespace {

// `v` (contiguous) with `shape`.
TensorView reshaped(TensorView v, const Shape& shape) {
  v.shape = shape;
  v.strides.clear();
  return v;
}

class ViewFamily final : public Family {
 public:
  std::string_view name() const override { return "view"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.kind == ops::FusionKind::view;
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    TensorView out = w.values.at(std::size_t(grp.outputs[0]));
    TensorView in = w.values.at(std::size_t(grp.inputs[0]));
    const ops::ViewRule& rule = grp.anchor->view;
    std::int64_t offset = 0;  // bytes from the operand's address to the view's first element
    if (rule.row_major && out.is_contiguous()) {  // the result written in x's shape
      out = reshaped(out, in.shape);
    } else if (auto v = rule.of ? rule.of(in, out.shape, w.shapes.node(grp.anchor_node).attrs)
                                : std::nullopt) {
      offset = std::int64_t(v->data - in.data);
      in = *v;
    } else {
      throw ShapeError(
          fmt::format("{}: a {} copies from {} into {}: one of them must be contiguous", grp.stem,
                      grp.anchor->name, in.describe(), out.describe()));
    }
    codegen::Body copy;
    copy.inputs = {in.dtype};
    copy.outputs = {out.dtype};
    copy.steps = {{"kiln::op::Identity", {{codegen::Ref::Kind::input, 0}}}};
    copy.results = {{codegen::Ref::Kind::step, 0}};
    KernelLaunch L = specialize_elementwise(copy, grp.stem, {out}, {in}, {},
                                            elementwise_tunables(t, grp.stem),
                                            gather_slots(w, {out, in}, 1));
    if (offset != 0) L.offsets = {0, offset};
    return L;
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch&, const Target&) const override {
    return autotune::elementwise_space();
  }
  std::vector<std::string_view> headers() const override { return {"elementwise.cuh"}; }
};

}  // namespace

const Family& view_family() {
  static const ViewFamily family;
  return family;
}

}  // namespace kiln
