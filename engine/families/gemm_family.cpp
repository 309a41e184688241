// The GEMM family: a matrix product (matmul, linear) with its fused epilogue
// (kernel_templates/kiln/gemm.cuh). Its specialization is engine/families/gemm*.
#include "engine/families/family.hpp"
#include "engine/families/gemm.hpp"

namespace kiln {
namespace {

class GemmFamily final : public Family {
 public:
  std::string_view name() const override { return "gemm"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion == ops::FusionClass::gemm;
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    GemmKernel k;
    k.op = grp.anchor;
    k.tf32 = w.shapes.node(grp.anchor_node).attrs.tf32;
    k.epilogue = grp.epilogue;
    k.outputs = w.views(grp.outputs);
    for (int id : grp.outputs) {  // a slice of the product's columns (engine/fusion.cpp)
      const Graph::Node& n = w.shapes.node(id);
      const Shape& of = w.shapes.node(std::get<int>(n.args.at(0))).shape;
      k.column0.push_back(n.op == "slice" ? ops::slice_range(of, n.attrs, n.name).start : 0);
    }
    const std::vector<TensorView> operands = w.views(grp.inputs);
    k.a = operands.at(0);
    k.b = operands.at(1);
    if (!grp.extras.empty()) k.bias = w.values.at(std::size_t(grp.extras[0]));
    k.epilogue_inputs = w.views(grp.epilogue_inputs);
    k.epilogue_scalars = grp.epilogue_scalars;
    k.arch = w.arch;
    return specialize_gemm(k, grp.stem, gemm_tunables(t, grp.stem));
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base,
                        const std::string&) const override {
    return autotune::gemm_space(base.tunables);
  }
  std::vector<std::string_view> headers() const override { return {"gemm.cuh", "gemm_sm90.cuh"}; }
};

}  // namespace

const Family& gemm_family() {
  static const GemmFamily family;
  return family;
}

}  // namespace kiln
