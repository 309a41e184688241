// The GEMM family: a matrix product (matmul, linear) with its fused epilogue
// (kernel_templates/kiln/gemm.cuh). Its specialization is the rest of this folder.
#include "engine/families/family.hpp"
#include "engine/families/gemm/gemm.hpp"
#include "engine/families/gemm/gemm_buckets.hpp"
#include "engine/ir/graph_ops.hpp"

namespace kiln {
namespace {

// The product's column that output `id`'s column 0 holds: a slice's start where the output is a
// slice of the product's columns (engine/passes/fusion_windows.cpp), else 0.
std::int64_t column0_of(const Graph& shapes, int id) {
  if (!is_window(shapes, id)) return 0;
  const Graph::Node& n = shapes.node(id);
  const Shape& x = shapes.node(std::get<int>(n.args[0])).shape;
  return op_def(shapes, n.op).view.window(x, n.attrs).value_or(0);
}

// What a product's group keeps from the planned graph: its arithmetic and which of its sizes
// the plan's dynamic dims set.
struct GemmPlanned final : GroupPayload {
  bool tf32 = false;
  GemmDynamic dynamic;
};

// Which of the product's sizes the plan's dynamic dims set: M (and the batches, which may merge
// into it) from the result's leading dims, N from its last (a result of rank 1 has both in its
// one dim), K from a's last.
GemmDynamic dynamic_sizes(const FusedGroup& grp, const Graph& planned) {
  const Shape& out = planned.node(grp.anchor_node).shape;
  const Shape& a = planned.node(grp.role(grp.anchor->operands.at(0))).shape;
  GemmDynamic d;
  for (std::size_t i = 0; i + 1 < out.size(); ++i) d.m = d.m || out[i] < 0;
  d.n = !out.empty() && out.back() < 0;
  if (out.size() == 1) d.m = d.n = d.m || d.n;
  d.batches = d.m;
  d.k = !a.empty() && a.back() < 0;
  return d;
}

GemmPlanned analyze_gemm(const FusedGroup& grp, const Graph& planned) {
  GemmPlanned p;
  p.tf32 = planned.node(grp.anchor_node).attrs.flag("tf32");
  p.dynamic = dynamic_sizes(grp, planned);
  return p;
}

class GemmFamily final : public Family {
 public:
  std::string_view name() const override { return "gemm"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  std::shared_ptr<const GroupPayload> analyze(const FusedGroup& grp,
                                              const Graph& planned) const override {
    return std::make_shared<GemmPlanned>(analyze_gemm(grp, planned));
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    const auto* kept = grp.payload_as<GemmPlanned>();
    const GemmPlanned planned = kept ? *kept : analyze_gemm(grp, w.planned);
    GemmKernel k;
    k.op = grp.anchor;
    k.tf32 = planned.tf32;
    k.epilogue = grp.epilogue;
    k.outputs = w.views(grp.outputs);
    for (int id : grp.outputs) k.column0.push_back(column0_of(w.shapes, id));
    k.a = w.values.at(std::size_t(grp.role(k.op->operands.at(0))));  // a (linear's x)
    k.b = w.values.at(std::size_t(grp.role(k.op->operands.at(1))));  // b (linear's w)
    if (const int bias = grp.role("bias"); bias >= 0) k.bias = w.values.at(std::size_t(bias));
    k.epilogue_inputs = w.views(grp.epilogue_inputs);
    k.epilogue_scalars = grp.epilogue_scalars;
    k.arch = w.target.arch;
    k.max_shared = w.target.max_shared;
    k.sms = w.target.sms;
    k.dynamic = planned.dynamic;
    return specialize_gemm(k, grp.stem, gemm_tunables(t, grp.stem));
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch& base, const Target&) const override {
    return autotune::gemm_space(base);
  }
  std::vector<std::string_view> headers() const override { return {"gemm.cuh", "gemm_sm90.cuh"}; }
  std::vector<std::int64_t> extent_probes() const override { return gemm_bucket_probes(); }
};

}  // namespace

const Family& gemm_family() {
  static const GemmFamily family;
  return family;
}

}  // namespace kiln
