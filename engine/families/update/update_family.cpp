// The update family: a slice_update's kernel (ops/slice_update.cpp), the elementwise template
// copying src into the window of dst's memory that its result is. A start attribute moves the
// output pointer (the launch's offset); a start tensor is read on the GPU (kiln/gather.cuh's
// Scatter), so a new start reuses the kernel and a replay's graph.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/elementwise/elementwise.hpp"
#include "engine/families/family.hpp"
#include "engine/families/gathers.hpp"

namespace kiln {
namespace {

KernelLaunch specialize_update(const GroupWork& w, const Tunables& t) {
  const FusedGroup& grp = w.group;
  const Graph::Node& n = w.shapes.node(grp.anchor_node);
  const TensorView& src = w.values.at(std::size_t(grp.inputs.at(0)));
  const TensorView& dst = w.values.at(std::size_t(grp.outputs.at(0)));  // its memory
  const std::int64_t rank = std::int64_t(dst.shape.size());
  const std::int64_t a = n.attrs.integer("axis").value_or(-1);
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  const std::int64_t extent = dst.shape[axis], len = src.shape[axis];
  const bool tensor_start = !grp.index_inputs.empty();
  const std::int64_t s = tensor_start ? 0 : n.attrs.integer("start").value_or(0);
  const Window window = window_along(dst, axis, s < 0 ? s + extent : s, len);
  GatherSlots scatter;
  if (tensor_start) {
    TensorView at = w.values.at(std::size_t(grp.index_inputs[0]));
    at.strides.assign(window.view.shape.size(), 0);  // one value for every element
    at.shape = window.view.shape;
    scatter.indices = {at};
    scatter.scatters = {{0, 0, window.view.strides[axis], extent - len}};
  }
  codegen::Body copy;
  copy.inputs = {src.dtype};
  copy.outputs = {dst.dtype};
  copy.steps = {{"kiln::op::Identity", {{codegen::Ref::Kind::input, 0}}}};
  copy.results = {{codegen::Ref::Kind::step, 0}};
  KernelLaunch L = specialize_elementwise(copy, grp.stem, {window.view}, {src}, {},
                                          elementwise_tunables(t, grp.stem), scatter);
  if (window.offset != 0) L.offsets = {window.offset};
  return L;
}

class UpdateFamily final : public Family {
 public:
  std::string_view name() const override { return "update"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    return specialize_update(w, t);
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch&, const Target&) const override {
    return autotune::elementwise_space();
  }
  std::vector<std::string_view> headers() const override { return {"elementwise.cuh"}; }
};

}  // namespace

const Family& update_family() {
  static const UpdateFamily family;
  return family;
}

}  // namespace kiln
