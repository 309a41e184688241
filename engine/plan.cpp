// Plans: a fused graph bound to tensors and launched on an engine.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include <kiln/graph.hpp>

#include "cache/manifest.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/elementwise.hpp"
#include "engine/engine_impl.hpp"
#include "engine/fusion.hpp"
#include "engine/plan_impl.hpp"
#include "engine/rows.hpp"

namespace kiln {

KernelLaunch detail::PlanImpl::specialize_tuned(const FusedGroup& grp, const std::vector<TensorView>& values, const Graph& g,
                                                const std::string& arch, const cache::TuningDb& records) const {
  KernelLaunch L = specialize(grp, values, g, arch);
  if (records.records().empty() || L.groups == 0) return L;
  const cache::TuningRecord* r = records.find(compiler::spec_id(L.spec));
  if (!r) return L;
  try {
    return specialize(grp, values, g, arch, r->winner);
  } catch (const Error& e) {
    static std::mutex mutex;
    static std::set<std::string> warned;  // once per record, not once per run
    std::lock_guard<std::mutex> lock(mutex);
    if (warned.insert(r->signature).second)
      spdlog::warn("kiln: the tuning record of {} does not fit it ({}); the default runs. Re-tune: kiln tune", L.spec.name, e.what());
    return L;
  }
}

bool fusion_enabled() {
  const char* v = std::getenv("KILN_DISABLE_FUSION");
  return !(v && *v && std::strcmp(v, "0") != 0);
}

Plan::Plan(const Graph& graph) : Plan(graph, fusion_enabled()) {}
Plan::Plan(const Graph& graph, bool fuse_ops) : impl_(std::make_unique<detail::PlanImpl>(graph, fuse_ops)) {
  if (graph.outputs().empty()) throw GraphError("the graph has no outputs");
}
Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

std::vector<PlanKernel> Plan::kernels(const std::string& arch) const {
  // A dynamic graph is specialized with its dynamic dims at 2 and at 3: a kernel the same both
  // times serves every extent of 2 or more (its grid is the launch's), another is specialized
  // per extent when the dims are bound.
  const bool dynamic = impl_->dynamic();
  Graph scratch[2];
  const Graph* shapes[2] = {&impl_->graph, &impl_->graph};
  if (dynamic)
    for (int i = 0; i < 2; ++i) shapes[i] = &impl_->bound_at(2 + i, scratch[i]);
  std::vector<TensorView> values[2];
  for (int i = 0; i < 2; ++i)
    for (const auto& n : shapes[i]->nodes()) values[i].push_back(detail::PlanImpl::desc(n));
  std::vector<PlanKernel> out;
  for (const FusedGroup& grp : impl_->groups) {
    PlanKernel k;
    k.ops = impl_->ops_of(grp);
    const KernelLaunch L = impl_->specialize(grp, values[0], *shapes[0], arch);
    if (!dynamic) {
      k.name = L.spec.name;
      k.grid = L.grid;
      k.block = L.block;
    } else if (compiler::spec_id(L.spec) == compiler::spec_id(impl_->specialize(grp, values[1], *shapes[1], arch).spec)) {
      k.name = L.spec.name;
      k.block = L.block;
    } else {
      k.name = grp.stem + "__dynamic";
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<KernelRecord> Plan::compile(Engine& engine) const {
  std::vector<KernelRecord> records;
  for (const KernelSpec& spec : plan_specs(impl_->graph, impl_->fused, {}, nullptr, engine.arch())) {
    std::string source;
    KernelRecord r = engine.impl().records[engine.impl().prepare(spec, &source).record];
    r.source = source;
    records.push_back(r);
  }
  return records;
}

namespace {

// The specs of `p`'s kernels over `graph` (static shapes), inputs as `inputs` gives them.
std::vector<KernelSpec> static_specs(const detail::PlanImpl& p, const Graph& graph, const std::map<std::string, TensorView>& inputs,
                                     const cache::TuningDb* records, const std::string& arch) {
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
    const KernelLaunch L = records ? p.specialize_tuned(grp, values, graph, arch, *records) : p.specialize(grp, values, graph, arch);
    if (L.groups) specs.push_back(L.spec);
  }
  return specs;
}

}  // namespace

std::vector<KernelSpec> plan_specs(const Graph& graph, bool fuse_ops, const std::map<std::string, TensorView>& inputs,
                                   const cache::TuningDb* records, const std::string& arch) {
  const detail::PlanImpl p(graph, fuse_ops);
  if (!p.dynamic()) return static_specs(p, graph, inputs, records, arch);
  if (!inputs.empty()) throw ArgumentError("input views are for a graph with static shapes; this one has dynamic dims (\"?\")");
  // Dynamic dims: bound to 2, then to 3. A kernel that differs depends on one (a row length, a
  // reduced extent) and cannot be compiled ahead; where none does, these kernels serve every
  // extent of 2 or more (with 32-bit indices): the dims are the launches'.
  std::vector<KernelSpec> probes[2];
  for (int k : {2, 3}) {
    Graph scratch;
    probes[k - 2] = static_specs(p, p.bound_at(k, scratch), {}, records, arch);
  }
  for (std::size_t i = 0; i < probes[0].size(); ++i)
    if (i >= probes[1].size() || compiler::spec_id(probes[0][i]) != compiler::spec_id(probes[1][i]))
      throw GraphError(fmt::format("kernel {} depends on a dynamic dim (\"?\") beyond the batch: give static shapes to precompile it",
                                   probes[0][i].name));
  return probes[0];
}

std::vector<KernelSpec> load_specs(const std::string& path, const cache::TuningDb* records, const std::string& arch) {
  const bool graph = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  return graph ? plan_specs(Graph::load(path), fusion_enabled(), {}, records, arch) : cache::read_manifest(path);
}


}  // namespace kiln
