// The concat family: a kernel per run of a concat's adjacent operands of one shape (ops/
// concat.cpp, engine/passes/fusion_parts.cpp), the elementwise template writing each operand
// into its window of the result (an output a window), computed there by its elementwise
// producers or copied from memory; each kernel after the first runs beside the one before it
// on sm_90 and later (LaunchConfig::beside).
#include <fmt/format.h>

#include <algorithm>

#include <kiln/error.hpp>

#include "engine/families/elementwise/elementwise.hpp"
#include "engine/families/family.hpp"
#include "engine/families/rows/rows.hpp"

namespace kiln {
namespace {

KernelLaunch specialize_part(const GroupWork& w, const Tunables& t) {
  const FusedGroup& grp = w.group;
  const Graph::Node& n = w.shapes.node(grp.anchor_node);
  const TensorView& result = w.values.at(std::size_t(grp.outputs.at(0)));
  const std::int64_t rank = std::int64_t(result.shape.size());
  const std::int64_t a = n.attrs.integer("axis").value_or(0);
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  const auto extent = [&](int i) {
    return w.shapes.node(std::get<int>(n.args.at(std::size_t(i)))).shape[axis];
  };
  std::int64_t start = 0;  // the operands before this kernel's first, along the axis
  for (int i = 0; i < grp.part; ++i) start += extent(i);
  std::vector<TensorView> windows;  // an operand's each
  std::vector<std::int64_t> offsets;
  for (int i = grp.part; i < grp.part + grp.parts; ++i) {
    const Window window = window_along(result, axis, start, extent(i));
    start += extent(i);
    windows.push_back(window.view);
    offsets.push_back(window.offset);
  }
  const std::vector<TensorView> inputs = w.views(grp.inputs);
  std::vector<TensorView> all = windows;
  all.insert(all.end(), inputs.begin(), inputs.end());
  KernelLaunch L = specialize_elementwise(grp.body, grp.stem, windows, inputs, grp.scalars,
                                          elementwise_tunables(t, grp.stem),
                                          gather_slots(w, all, windows.size()), /*beside=*/true);
  if (std::any_of(offsets.begin(), offsets.end(), [](std::int64_t o) { return o != 0; }))
    L.offsets = offsets;
  // The parts write disjoint windows of values made before the first part's kernel: where one
  // follows its previous part, their blocks may share the GPU (grid dependency control: sm_90
  // and later).
  L.config.beside = grp.beside_previous && has_clusters(w.target.arch);
  return L;
}

class ConcatFamily final : public Family {
 public:
  std::string_view name() const override { return "concat"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    return specialize_part(w, t);
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch&, const Target&) const override {
    return autotune::elementwise_space();
  }
  std::vector<std::string_view> headers() const override { return {"elementwise.cuh"}; }
};

}  // namespace

const Family& concat_family() {
  static const ConcatFamily family;
  return family;
}

}  // namespace kiln
