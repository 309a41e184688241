// The scan family: cumsum with its fused prologue and epilogue (kernel_templates/kiln/scan.cuh);
// its specialization is scan.*.
#include "engine/families/family.hpp"
#include "engine/families/scan/scan.hpp"

namespace kiln {
namespace {

class ScanFamily final : public Family {
 public:
  std::string_view name() const override { return "scan"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    const Attrs& attrs = w.shapes.node(grp.anchor_node).attrs;
    ScanKernel k;
    k.prologue = grp.body;
    k.epilogue = grp.epilogue;
    k.outputs = w.views(grp.outputs);
    k.inputs = w.views(grp.inputs);
    k.epilogue_inputs = w.views(grp.epilogue_inputs);
    k.scalars = grp.scalars;
    k.epilogue_scalars = grp.epilogue_scalars;
    k.shape = w.shapes.node(grp.role("x")).shape;
    k.axis = attrs.integer("axis").value_or(-1);
    k.reverse = attrs.flag("reverse");
    return specialize_scan(k, grp.stem, t);
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base, const Target&) const override {
    return autotune::scan_space(base.tunables);
  }
  std::vector<std::string_view> headers() const override { return {"scan.cuh"}; }
};

}  // namespace

const Family& scan_family() {
  static const ScanFamily family;
  return family;
}

}  // namespace kiln
