// The convolution family: conv2d (ops/conv2d.cpp) as an implicit GEMM with its fused epilogue
// (kernel_templates/kiln/conv.cuh). Its specialization is the rest of this folder.
#include "engine/families/conv/conv.hpp"
#include "engine/families/family.hpp"
#include "engine/families/gemm/gemm_buckets.hpp"

namespace kiln {
namespace {

// What a convolution's group keeps from the planned graph: whether a dynamic dim sets its
// output pixels (x's N, H or W).
struct ConvPlanned final : GroupPayload {
  bool dynamic = false;
};

ConvPlanned analyze_conv(const FusedGroup& grp, const Graph& planned) {
  ConvPlanned p;
  for (std::int64_t e : planned.node(grp.anchor_node).shape) p.dynamic = p.dynamic || e < 0;
  return p;
}

class ConvFamily final : public Family {
 public:
  std::string_view name() const override { return "conv"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  std::shared_ptr<const GroupPayload> analyze(const FusedGroup& grp,
                                              const Graph& planned) const override {
    return std::make_shared<ConvPlanned>(analyze_conv(grp, planned));
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    const auto* kept = grp.payload_as<ConvPlanned>();
    ConvKernel k;
    k.x = w.values.at(std::size_t(grp.role(grp.anchor->operands.at(0))));
    k.w = w.values.at(std::size_t(grp.role(grp.anchor->operands.at(1))));
    if (const int bias = grp.role("bias"); bias >= 0) k.bias = w.values.at(std::size_t(bias));
    const Attrs& attrs = w.shapes.node(grp.anchor_node).attrs;
    k.geometry = ops::conv_geometry(k.x.shape, k.w.shape, attrs);
    k.exact = attrs.flag("exact");
    k.epilogue = grp.epilogue;
    k.outputs = w.views(grp.outputs);
    k.epilogue_inputs = w.views(grp.epilogue_inputs);
    k.epilogue_scalars = grp.epilogue_scalars;
    k.arch = w.target.arch;
    k.max_shared = w.target.max_shared;
    k.sms = w.target.sms;
    k.dynamic = kept ? kept->dynamic : analyze_conv(grp, w.planned).dynamic;
    return specialize_conv(k, grp.stem, gemm_tunables(t, grp.stem));
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base, const Target&) const override {
    return autotune::conv_space(base);
  }
  std::vector<std::string_view> headers() const override { return {"conv.cuh", "gemm.cuh"}; }
  std::vector<std::int64_t> extent_probes() const override { return gemm_bucket_probes(); }
};

}  // namespace

const Family& conv_family() {
  static const ConvFamily family;
  return family;
}

}  // namespace kiln
