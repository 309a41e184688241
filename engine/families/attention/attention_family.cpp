// The attention family: scaled dot-product attention (ops/attention.cpp) on the mma.sync kernel
// (kernel_templates/kiln/attention.cuh) or the plain one (attention_rows.cuh). Its operands are
// read from memory as the views they are; its specialization is attention.*.
#include "engine/families/attention/attention.hpp"
#include "engine/families/family.hpp"

namespace kiln {
namespace {

class AttentionFamily final : public Family {
 public:
  std::string_view name() const override { return "attention"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    const Attrs& attrs = w.shapes.node(grp.anchor_node).attrs;
    const std::vector<TensorView> in = w.views(grp.inputs);
    AttentionKernel k;
    k.out = w.values.at(std::size_t(grp.outputs.at(0)));
    k.q = in.at(0), k.k = in.at(1), k.v = in.at(2);
    // After v: a mask (float or bool), then kv_lens (an integer tensor, which no mask is).
    for (std::size_t i = 3; i < in.size(); ++i) (is_integer(in[i].dtype) ? k.lens : k.mask) = in[i];
    k.causal = attrs.flag("causal");
    const AttrValue* align = attrs.find("causal_align");
    k.bottom_right = align && std::get<std::string>(*align) == "bottom_right";
    k.scale = attrs.number("scale");
    k.max_shared = w.target.max_shared;
    return specialize_attention(k, grp.stem, t);
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base,
                        const Target& target) const override {
    return autotune::attention_space(base, target.max_shared);
  }
  std::vector<std::string_view> headers() const override {
    return {"attention.cuh", "attention_rows.cuh"};
  }
};

}  // namespace

const Family& attention_family() {
  static const AttentionFamily family;
  return family;
}

}  // namespace kiln
