// The update family: a slice_update's kernel (ops/slice_update.cpp), the elementwise template
// copying src into the window of dst's memory that its result is. A start attribute moves the
// output pointer (the launch's offset); a start tensor is read on the GPU (kiln/gather.cuh's
// Scatter), so a new start reuses the kernel and a replay's graph.
#include <fmt/format.h>

#include <algorithm>

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
  TensorView window = w.values.at(std::size_t(grp.outputs.at(0)));  // dst's memory
  const std::int64_t rank = std::int64_t(window.shape.size());
  const std::int64_t a = n.attrs.integer("axis").value_or(-1);
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  const std::int64_t extent = window.shape[axis], len = src.shape[axis];
  window.strides = window.resolved_strides();
  window.shape[axis] = len;
  const std::int64_t stride = window.strides[axis];
  GatherSlots scatter;
  std::int64_t start = 0;
  if (!grp.index_inputs.empty()) {
    TensorView at = w.values.at(std::size_t(grp.index_inputs[0]));
    at.strides.assign(window.shape.size(), 0);  // one value for every element
    at.shape = window.shape;
    scatter.indices = {at};
    scatter.scatters = {{0, 0, stride, extent - len}};
  } else {
    const std::int64_t s = n.attrs.integer("start").value_or(0);
    start = s < 0 ? s + extent : s;
  }
  codegen::Body copy;
  copy.inputs = {src.dtype};
  copy.outputs = {window.dtype};
  copy.steps = {{"kiln::op::Identity", {{codegen::Ref::Kind::input, 0}}}};
  copy.results = {{codegen::Ref::Kind::step, 0}};
  // The window's first element: the view moves there (a vector store must be as aligned as the
  // window is), and the launch adds the same bytes to dst's address.
  const std::int64_t offset = start * stride * std::int64_t(size_of(window.dtype));
  window.data += std::uint64_t(offset);
  window.capacity -= std::min(window.capacity, std::uint64_t(offset));
  KernelLaunch L = specialize_elementwise(copy, grp.stem, {window}, {src}, {},
                                          elementwise_tunables(t, grp.stem), scatter);
  if (offset != 0) L.offsets = {offset};
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
