// Plans: a fused graph bound to tensors and launched on an engine.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <kiln/graph.hpp>
#include <set>

#include "cache/manifest.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/engine_impl.hpp"
#include "engine/families/family.hpp"
#include "engine/fusion.hpp"
#include "engine/plan_impl.hpp"

namespace kiln {

bool fusion_enabled() {
  const char* v = std::getenv("KILN_DISABLE_FUSION");
  return !(v && *v && std::strcmp(v, "0") != 0);
}

Plan::Plan(const Graph& graph) : Plan(graph, fusion_enabled()) {}
Plan::Plan(const Graph& graph, bool fuse_ops)
    : impl_(std::make_unique<detail::PlanImpl>(graph, fuse_ops)) {
  if (graph.outputs().empty()) throw GraphError("the graph has no outputs");
}
Plan::~Plan() = default;

void Plan::check(const std::map<std::string, TensorView>& inputs) const {
  Graph scratch;
  impl_->bind(inputs, scratch);
}
std::map<std::string, TensorView> Plan::outputs(
    const std::map<std::string, TensorView>& inputs) const {
  Graph scratch;
  const Graph& bound = impl_->bind(inputs, scratch);
  std::map<std::string, TensorView> out;
  for (int o : bound.outputs()) {
    TensorView& v = out[bound.node(o).name];
    v.shape = bound.node(o).shape;
    v.dtype = bound.node(o).dtype;
  }
  return out;
}
const Graph& Plan::graph() const { return impl_->graph; }
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

namespace {

// One kernel of a plan as specialized without memory, and whether it depends on a dynamic dim.
struct Planned {
  KernelLaunch launch;
  bool per_extent = false;  ///< it changes with a dynamic dim's extent (a row length, say)
  bool buckets = false;     ///< rows of a dynamic length: a kernel per bucket of lengths

  /// The kernel's name in a plan: a per-extent or bucketed kernel has none of its own.
  std::string name(const FusedGroup& grp) const {
    return per_extent ? grp.stem + "__dynamic"
           : buckets  ? grp.stem + "__buckets"
                      : launch.spec.name;
  }
};

// Each group of `p` over `graph`'s shapes (inputs as `views` gives views of them, tuned as
// `records` says, if given).
std::vector<KernelLaunch> specialize_groups(const detail::PlanImpl& p, const Graph& graph,
                                            const std::map<std::string, TensorView>& views,
                                            const cache::TuningDb* records,
                                            const std::string& arch) {
  std::vector<TensorView> values;
  for (const auto& n : graph.nodes()) {
    values.push_back(detail::PlanImpl::desc(n));
    if (auto it = views.find(n.name); it != views.end() && n.op == "input") {
      if (it->second.shape != n.shape || it->second.dtype != n.dtype)
        throw ShapeError(fmt::format("input '{}': view {} does not match the graph's {}{}", n.name,
                                     it->second.describe(), name_of(n.dtype), to_string(n.shape)));
      values.back() = it->second;
    }
  }
  std::vector<KernelLaunch> out;
  for (const FusedGroup& grp : p.groups)
    out.push_back(records ? p.specialize_tuned(grp, values, graph, arch, *records)
                          : p.specialize(grp, values, graph, arch));
  return out;
}

// Each group of `p` over the graph's shapes, as specialize_groups. A graph with dynamic dims
// is specialized with them at 2 and at 3: a kernel the same both times serves every extent of
// 2 or more (with 32-bit indices: the dims are the launch's, as a batch is); a row kernel of a
// dynamic length is its bucket's (`buckets`); any other that differs is `per_extent`.
std::vector<Planned> plan_groups(const detail::PlanImpl& p,
                                 const std::map<std::string, TensorView>& inputs,
                                 const cache::TuningDb* records, const std::string& arch) {
  std::vector<Planned> planned;
  if (!p.dynamic()) {
    for (KernelLaunch& L : specialize_groups(p, p.graph, inputs, records, arch))
      planned.push_back({std::move(L), false});
    return planned;
  }
  if (!inputs.empty())
    throw ArgumentError(
        "input views are for a graph with static shapes; this one has dynamic dims (\"?\")");
  Graph two, three;
  std::vector<KernelLaunch> at2 = specialize_groups(p, p.bound_at(2, two), {}, records, arch),
                            at3 = specialize_groups(p, p.bound_at(3, three), {}, records, arch);
  for (std::size_t i = 0; i < at2.size(); ++i) {
    const bool buckets = !at2[i].geometry.empty() && !at3[i].geometry.empty();
    const bool differs = compiler::spec_id(at2[i].spec) != compiler::spec_id(at3[i].spec);
    planned.push_back({std::move(at2[i]), differs && !buckets, buckets});
  }
  return planned;
}

// The bucket kernels of `planned`'s bucketed groups: specialized at every extent their
// families probe (Family::extent_probes), each distinct one once.
std::vector<KernelSpec> bucket_specs(const detail::PlanImpl& p, const std::vector<Planned>& planned,
                                     const cache::TuningDb* records, const std::string& arch) {
  std::set<std::int64_t> probes;
  for (const Planned& k : planned)
    if (k.buckets)
      for (std::int64_t e : k.launch.family->extent_probes()) probes.insert(e);
  std::vector<KernelSpec> specs;
  std::set<std::string> seen;
  for (std::int64_t length : probes) {
    Graph scratch;
    const std::vector<KernelLaunch> at =
        specialize_groups(p, p.bound_at(length, scratch), {}, records, arch);
    for (std::size_t i = 0; i < at.size(); ++i)
      if (planned[i].buckets && at[i].groups && seen.insert(compiler::spec_id(at[i].spec)).second)
        specs.push_back(at[i].spec);
  }
  return specs;
}

}  // namespace

std::vector<PlanKernel> Plan::kernels(const std::string& arch) const {
  const bool dynamic = impl_->dynamic();
  const std::vector<Planned> planned = plan_groups(*impl_, {}, nullptr, arch);
  std::vector<PlanKernel> out;
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const FusedGroup& grp = impl_->groups[i];
    const KernelLaunch& L = planned[i].launch;
    PlanKernel k;
    k.ops = impl_->ops_of(grp);
    k.name = planned[i].name(grp);
    k.grid = dynamic ? 0 : L.config.grid[0];  // with dynamic dims, the launch's
    k.block = planned[i].per_extent || planned[i].buckets ? 0 : L.config.block[0];
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<KernelRecord> Plan::compile(Engine& engine) const {
  const std::vector<KernelSpec> specs =
      plan_specs(impl_->graph, impl_->fused, {}, nullptr, engine.arch());
  std::vector<const KernelSpec*> todo;
  for (const KernelSpec& s : specs) todo.push_back(&s);
  detail::EngineImpl& e = detail::impl_of(engine);
  const std::size_t before = e.records.size();  // records added now: kernels new to the engine
  std::set<std::size_t> listed;
  std::vector<KernelRecord> records;
  for (const detail::LoadedKernel* k : e.prepare_all(todo)) {
    records.push_back(e.records[k->record]);
    if (k->record < before || !listed.insert(k->record).second) records.back().source = "memory";
  }
  return records;
}

std::vector<KernelSpec> plan_specs(const Graph& graph, bool fuse_ops,
                                   const std::map<std::string, TensorView>& inputs,
                                   const cache::TuningDb* records, const std::string& arch) {
  const detail::PlanImpl p(graph, fuse_ops);
  std::vector<KernelSpec> specs;
  const std::vector<Planned> planned = plan_groups(p, inputs, records, arch);
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const Planned& k = planned[i];
    if (k.per_extent)  // cannot be compiled ahead
      throw GraphError(
          fmt::format("kernel {} (fusing {}) depends on a dynamic dim (\"?\") beyond the batch, so "
                      "it compiles once "
                      "per extent: give the graph static shapes, or precompile a manifest recorded "
                      "with KILN_RECORD",
                      k.name(p.groups[i]), fmt::join(p.ops_of(p.groups[i]), ", ")));
    if (k.launch.groups && !k.buckets) specs.push_back(k.launch.spec);
  }
  for (KernelSpec& s : bucket_specs(p, planned, records, arch)) specs.push_back(std::move(s));
  return specs;
}

std::vector<KernelSpec> run_specs(const Graph& graph, std::int64_t extent, bool fuse_ops,
                                  const std::string& arch) {
  const detail::PlanImpl p(graph, fuse_ops);
  Graph scratch;
  std::vector<KernelSpec> specs;
  for (KernelLaunch& L : specialize_groups(p, p.bound_at(extent, scratch), {}, nullptr, arch))
    if (L.groups) specs.push_back(std::move(L.spec));
  return specs;
}

std::vector<KernelSpec> load_specs(const std::string& path, const cache::TuningDb* records,
                                   const std::string& arch) {
  const bool graph = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  return graph ? plan_specs(Graph::load(path), fusion_enabled(), {}, records, arch)
               : cache::read_manifest(path);
}

}  // namespace kiln
