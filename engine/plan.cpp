// Plans: a fused graph bound to tensors and launched on an engine.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include <kiln/graph.hpp>

#include "cache/manifest.hpp"
#include "engine/elementwise.hpp"
#include "engine/engine_impl.hpp"
#include "engine/fusion.hpp"
#include "engine/plan_impl.hpp"
#include "engine/rows.hpp"

namespace kiln {

namespace {
bool fusion_enabled() {
  const char* v = std::getenv("KILN_DISABLE_FUSION");
  return !(v && *v && std::strcmp(v, "0") != 0);
}
}  // namespace

Plan::Plan(const Graph& graph) : Plan(graph, fusion_enabled()) {}
Plan::Plan(const Graph& graph, bool fuse_ops) : impl_(std::make_unique<detail::PlanImpl>(graph, fuse_ops)) {
  if (graph.outputs().empty()) throw GraphError("the graph has no outputs");
}
Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

std::vector<PlanKernel> Plan::kernels() const {
  std::vector<TensorView> values;
  for (const auto& n : impl_->graph.nodes()) values.push_back(detail::PlanImpl::desc(n));
  std::vector<PlanKernel> out;
  for (const FusedGroup& grp : impl_->groups) {
    PlanKernel k;
    for (int id : grp.steps) k.ops.push_back(impl_->graph.node(id).name);
    if (grp.row) k.ops.push_back(impl_->graph.node(grp.row_node).name);
    for (int id : grp.epilogue_steps) k.ops.push_back(impl_->graph.node(id).name);
    if (impl_->dynamic()) {
      k.name = grp.stem + "__dynamic";  // specialized when the dims are bound
    } else {
      const KernelLaunch L = impl_->specialize(grp, values, impl_->graph);
      k.name = L.spec.name;
      k.grid = L.grid;
      k.block = L.block;
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<KernelRecord> Plan::compile(Engine& engine) const {
  std::vector<KernelRecord> records;
  for (const KernelSpec& spec : plan_specs(impl_->graph, impl_->fused)) {
    std::string source;
    KernelRecord r = engine.impl().records[engine.impl().prepare(spec, &source).record];
    r.source = source;
    records.push_back(r);
  }
  return records;
}

std::vector<KernelSpec> plan_specs(const Graph& graph, bool fuse_ops, const std::map<std::string, TensorView>& inputs) {
  const detail::PlanImpl p(graph, fuse_ops);
  if (p.dynamic()) throw GraphError("the graph has dynamic dims (\"?\"): give static shapes to precompile it");
  std::vector<TensorView> values;
  for (const auto& n : graph.nodes()) {
    values.push_back(detail::PlanImpl::desc(n));
    if (auto it = inputs.find(n.name); it != inputs.end() && n.op == "input") {
      if (it->second.shape != n.shape || it->second.dtype != n.dtype)
        throw ShapeError(fmt::format("input '{}': view {} does not match the graph's {}{}", n.name, it->second.describe(),
                                     name_of(n.dtype), to_string(n.shape)));
      values.back() = it->second;
    }
  }
  std::vector<KernelSpec> specs;
  for (const FusedGroup& grp : p.groups) {
    const KernelLaunch L = p.specialize(grp, values, graph);
    if (L.groups) specs.push_back(L.spec);
  }
  return specs;
}

std::vector<KernelSpec> load_specs(const std::string& path) {
  const bool graph = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  return graph ? plan_specs(Graph::load(path)) : cache::read_manifest(path);
}


}  // namespace kiln
