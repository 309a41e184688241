// The attention family: scaled dot-product attention (ops/attention.cpp) on the sm_90a kernel
// (kernel_templates/kiln/attention_sm90.cuh), the mma.sync kernel (attention.cuh), its decode
// arrangement (attention_decode.cuh) or the plain one (attention_rows.cuh). Its operands are read
// from memory as the views they are; its specialization is attention.* and attention_tiles.cpp.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/codegen/layout.hpp"
#include "engine/families/attention/attention.hpp"
#include "engine/families/family.hpp"
#include "engine/families/rows/rows.hpp"

namespace kiln {
namespace {

// What an attention group keeps from the planned graph: whether a dynamic dim sets a length,
// a batch or the heads of one of its operands (its path and split follow them).
struct AttentionPlanned final : GroupPayload {
  bool dynamic = false;
};

AttentionPlanned analyze_attention(const FusedGroup& grp, const Graph& planned) {
  AttentionPlanned p;
  const auto& anchor = planned.node(grp.anchor_node);
  for (const auto& a : anchor.args)
    if (const int* id = std::get_if<int>(&a))
      for (std::int64_t e : planned.node(*id).shape) p.dynamic = p.dynamic || e < 0;
  for (std::int64_t e : anchor.shape) p.dynamic = p.dynamic || e < 0;
  return p;
}

// `v`, a tensor of the epilogue's over the shape of the last of `views` (views of the result:
// FusedGroup::epilogue_views), seen over the result's shape: the strides through which each
// element of the result reaches v's element.
TensorView through_views(const Graph& shapes, const std::vector<int>& views, const TensorView& v,
                         const std::string& stem) {
  const int result = std::get<int>(shapes.node(views.front()).args.at(0));
  const std::optional<Shape> strides = strides_through(
      shapes, views, broadcast_strides(v, shapes.node(views.back()).shape, "epilogue operand"));
  if (!strides)
    throw Error(
        fmt::format("{}: internal error in the fusion pass: its epilogue reads its result "
                    "through views that do not map back to it (set KILN_DISABLE_FUSION=1 "
                    "to work around it)",
                    stem));
  TensorView out = v;
  out.shape = shapes.node(result).shape;
  out.strides = *strides;
  return out;
}

// q's elementwise producers (FusedGroup::x, the body), computed as the kernel loads q: q's view
// is the prologue's first input seen over q's shape (strides 0 where it broadcasts), the others
// its extras (set_epilogue_slots broadcasts them).
void set_prologue(AttentionKernel& k, const FusedGroup& grp, const GroupWork& w) {
  if (grp.x < 0 || grp.body.outputs.empty()) return;
  const Shape& shape = w.shapes.node(grp.x).shape;
  k.q.strides = broadcast_strides(k.q, shape, "prologue operand");
  k.q.shape = shape;
  k.prologue_inputs = w.views(grp.extras);
  k.prologue = grp.body;
  k.prologue_scalars = grp.scalars;
}

// The group's outputs (fusion_join.cpp orders them): the attention result or its epilogue's
// outputs (the result first where something else reads it too), then the lse
// (attention_lse); or the lse alone. Without a result, the kernel writes none: `out` keeps q's
// shape, row-major, for the strides the launch's parameters take.
void set_outputs(AttentionKernel& k, const FusedGroup& grp, const GroupWork& w) {
  k.store_out = false;
  int out_node = -1;
  for (int id : grp.outputs) {
    const TensorView& v = w.values.at(std::size_t(id));
    if (w.shapes.node(id).op == "attention_lse") {
      k.lse = v;
    } else if (k.store_out) {
      k.epilogue_outputs.push_back(v);
    } else {
      k.out = v;
      k.store_out = true;
      out_node = id;
    }
  }
  if (!grp.epilogue_steps.empty()) {
    k.epilogue = grp.epilogue;
    k.epilogue_inputs = w.views(grp.epilogue_inputs);
    k.epilogue_scalars = grp.epilogue_scalars;
  }
  if (!grp.epilogue_views.empty()) {
    const auto through = [&](TensorView& v) {
      v = through_views(w.shapes, grp.epilogue_views, v, grp.stem);
    };
    for (auto* list : {&k.epilogue_outputs, &k.epilogue_inputs})
      for (TensorView& v : *list) through(v);
    if (k.store_out && out_node != grp.anchor_node) through(k.out);
  }
  if (k.store_out) return;
  k.out = TensorView{};
  k.out.shape = k.q.shape;
  k.out.dtype = k.dtype();
}

class AttentionFamily final : public Family {
 public:
  std::string_view name() const override { return "attention"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  std::shared_ptr<const GroupPayload> analyze(const FusedGroup& grp,
                                              const Graph& planned) const override {
    return std::make_shared<AttentionPlanned>(analyze_attention(grp, planned));
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    const auto* kept = grp.payload_as<AttentionPlanned>();
    const Attrs& attrs = w.shapes.node(grp.anchor_node).attrs;
    const std::vector<TensorView> in = w.views(grp.inputs);
    AttentionKernel k;
    k.q = in.at(0), k.k = in.at(1), k.v = in.at(2);
    set_prologue(k, grp, w);
    set_outputs(k, grp, w);
    // After v: a mask (float or bool), then kv_lens (an integer tensor, which no mask is).
    for (std::size_t i = 3; i < in.size(); ++i) (is_integer(in[i].dtype) ? k.lens : k.mask) = in[i];
    k.causal = attrs.flag("causal");
    const AttrValue* align = attrs.find("causal_align");
    k.bottom_right = align && std::get<std::string>(*align) == "bottom_right";
    k.scale = attrs.number("scale");
    k.scale_factor = folded_scale(w.shapes, grp);
    k.max_shared = w.target.max_shared;
    k.sms = w.target.sms;
    k.clusters = has_clusters(w.target.arch);
    k.wgmma = w.target.arch == "sm_90a";
    k.dynamic = kept ? kept->dynamic : analyze_attention(grp, w.planned).dynamic;
    return specialize_attention(k, grp.stem, t);
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base,
                        const Target& target) const override {
    return autotune::attention_space(base, target.max_shared, has_clusters(target.arch));
  }
  std::vector<std::string_view> headers() const override {
    return {"attention.cuh",          "attention_copies.cuh",
            "attention_decode.cuh",   "attention_decode_merge.cuh",
            "attention_epilogue.cuh", "attention_prologue.cuh",
            "attention_rows.cuh",
            "attention_sm90.cuh",     "attention_sm90_items.cuh",
            "attention_sm90_softmax.cuh"};
  }
  std::vector<std::int64_t> extent_probes() const override {
    // Past the decode path's bound (16 query rows), and lengths doubling over the range where
    // its split grows (a split is a power of two, chosen by the tiles of keys).
    std::vector<std::int64_t> probes = {17};
    for (std::int64_t e = 1; e <= 65536; e *= 2) probes.push_back(e);
    return probes;
  }
};

}  // namespace

const Family& attention_family() {
  static const AttentionFamily family;
  return family;
}

}  // namespace kiln
