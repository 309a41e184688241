// The elementwise family: a fused chain of elementwise ops (kernel_templates/kiln/elementwise.cuh).
#include <fmt/format.h>

#include "engine/families/elementwise/elementwise.hpp"
#include "engine/families/family.hpp"

namespace kiln {

namespace autotune {

Space elementwise_space() {
  Space s;
  s.tunables = codegen::space_tunables(elementwise_tunable_table(), ~0u);
  s.fallback = {{"block", ElementwiseTunables::kDefaultBlock},
                {"unroll", ElementwiseTunables::kDefaultUnroll}};
  s.reject = block_too_large;
  return s;
}

}  // namespace autotune

namespace {

class ElementwiseFamily final : public Family {
 public:
  std::string_view name() const override { return "elementwise"; }
  bool claims(const FusedGroup& grp, const Graph&) const override { return !grp.anchor; }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    const std::vector<TensorView> outputs = w.views(grp.outputs), inputs = w.views(grp.inputs);
    std::vector<TensorView> all = outputs;
    all.insert(all.end(), inputs.begin(), inputs.end());
    return specialize_elementwise(grp.body, grp.stem, outputs, inputs, grp.scalars,
                                  elementwise_tunables(t, grp.stem),
                                  gather_slots(w, all, outputs.size()));
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch&, const Target&) const override {
    return autotune::elementwise_space();
  }
  std::vector<std::string_view> headers() const override { return {"elementwise.cuh"}; }
};

}  // namespace

const Family& elementwise_family() {
  static const ElementwiseFamily family;
  return family;
}

}  // namespace kiln
