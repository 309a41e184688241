// Plans: a fused graph bound to tensors and launched on an engine.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <kiln/graph.hpp>
#include <set>

#include "cache/manifest.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/exec/plan_impl.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/family.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

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
  // The memory order each output is made in (a convolution of channels_last x: channels_last).
  std::vector<TensorView> values;
  for (const auto& n : bound.nodes()) {
    values.push_back(detail::PlanImpl::desc(n));
    if (auto it = inputs.find(n.name); it != inputs.end() && n.op == "input")
      values.back() = it->second;
  }
  view_values(bound, impl_->groups, values);
  std::map<std::string, TensorView> out;
  for (int o : bound.outputs()) {
    TensorView& v = out[bound.node(o).name];
    v.shape = bound.node(o).shape;
    v.dtype = bound.node(o).dtype;
    v.strides = values[std::size_t(o)].strides;
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
                                            const cache::TuningDb* records, const Target& target) {
  std::vector<TensorView> values;
  std::set<int> given;  // outputs in the caller's memory, as a run given them writes them
  for (int id = 0; id < int(graph.nodes().size()); ++id) {
    const Graph::Node& n = graph.node(id);
    values.push_back(detail::PlanImpl::desc(n));
    auto it = views.find(n.name);
    const bool output = fusion::is_output(graph, id);
    if (it == views.end() || (n.op != "input" && !output)) continue;
    if (it->second.shape != n.shape || it->second.dtype != n.dtype)
      throw ShapeError(fmt::format("{} '{}': view {} does not match the graph's {}{}",
                                   output ? "output" : "input", n.name, it->second.describe(),
                                   name_of(n.dtype), to_string(n.shape)));
    if (output) {
      check_view(it->second, fmt::format("output '{}'", n.name), false);
      given.insert(id);
    }
    values.back() = it->second;
  }
  view_values(graph, p.groups, values, given);
  std::vector<KernelLaunch> out;
  for (const FusedGroup& grp : p.groups)
    out.push_back(records ? p.specialize_tuned(grp, values, graph, target, *records)
                          : p.specialize(grp, values, graph, target));
  return out;
}

// Each group of `p` over the graph's shapes, as specialize_groups. A graph with dynamic dims
// is specialized with them at 2 and at 3: a kernel the same both times serves every extent of
// 2 or more (with 32-bit indices: the dims are the launch's, as a batch is); one its family
// chose for a bucket of extents both times (rows of a dynamic length, a product's dynamic M) is
// its bucket's (`buckets`); any other that differs is `per_extent`.
std::vector<Planned> plan_groups(const detail::PlanImpl& p,
                                 const std::map<std::string, TensorView>& inputs,
                                 const cache::TuningDb* records, const Target& target) {
  std::vector<Planned> planned;
  if (!p.dynamic()) {
    for (KernelLaunch& L : specialize_groups(p, p.graph, inputs, records, target))
      planned.push_back({std::move(L), false});
    return planned;
  }
  if (!inputs.empty())
    throw ArgumentError(
        "views of inputs or outputs are for a graph with static shapes; this one has dynamic "
        "dims (\"?\")");
  Graph two, three;
  std::vector<KernelLaunch> at2 = specialize_groups(p, p.bound_at(2, two), {}, records, target),
                            at3 = specialize_groups(p, p.bound_at(3, three), {}, records, target);
  for (std::size_t i = 0; i < at2.size(); ++i) {
    const bool buckets = at2[i].bucketed && at3[i].bucketed;
    const bool differs = compiler::spec_id(at2[i].spec) != compiler::spec_id(at3[i].spec);
    planned.push_back({std::move(at2[i]), differs && !buckets, buckets});
  }
  return planned;
}

// The kernels a dynamic graph runs besides those planned at 2: its bucketed groups' at every
// extent their families probe (Family::extent_probes), and every group's at an extent of 1,
// where a unit dim drops out of a layout (a batch of 1 is a batch like any other: precompiled
// too). Each distinct one once; `seen` holds the spec ids already listed.
std::vector<KernelSpec> extra_specs(const detail::PlanImpl& p, const std::vector<Planned>& planned,
                                    const cache::TuningDb* records, const Target& target,
                                    std::set<std::string>& seen) {
  std::set<std::int64_t> probes = {1};
  for (const Planned& k : planned)
    if (k.buckets)
      for (std::int64_t e : k.launch.family->extent_probes()) probes.insert(e);
  std::vector<KernelSpec> specs;
  for (std::int64_t extent : probes) {
    Graph scratch;
    std::vector<KernelLaunch> at;
    try {
      at = specialize_groups(p, p.bound_at(extent, scratch), {}, records, target);
    } catch (const ShapeError&) {
      continue;  // the graph cannot run at this extent, so no kernel of it is needed
    }
    for (std::size_t i = 0; i < at.size(); ++i)
      if ((extent == 1 || planned[i].buckets) && at[i].groups &&
          seen.insert(compiler::spec_id(at[i].spec)).second)
        specs.push_back(at[i].spec);
  }
  return specs;
}

// "x[?, 4, 768] dim 0, mask[?] dim 0": the dynamic dims of `g`'s inputs.
std::string dynamic_dims(const Graph& g) {
  std::vector<std::string> dims;
  for (const auto& n : g.nodes()) {
    if (n.op != "input") continue;
    std::vector<std::string> extents;
    for (std::int64_t e : n.shape) extents.push_back(e < 0 ? "?" : std::to_string(e));
    for (std::size_t d = 0; d < n.shape.size(); ++d)
      if (n.shape[d] < 0)
        dims.push_back(fmt::format("{}[{}] dim {}", n.name, fmt::join(extents, ", "), d));
  }
  return fmt::format("{}", fmt::join(dims, ", "));
}

}  // namespace

std::vector<PlanKernel> Plan::kernels(const std::string& arch) const {
  const std::vector<Planned> planned = plan_groups(*impl_, {}, nullptr, target_of(arch));
  std::vector<PlanKernel> out;
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const FusedGroup& grp = impl_->groups[i];
    const KernelLaunch& L = planned[i].launch;
    PlanKernel k;
    k.ops = impl_->ops_of(grp);
    k.name = planned[i].name(grp);
    // A grid is the launch's only where the kernel reads or writes a value with a dynamic dim
    // (a dynamic input that no kernel reads changes no grid).
    const std::vector<int> touched = grp.pointer_nodes();
    const bool dynamic = std::any_of(touched.begin(), touched.end(), [&](int id) {
      if (id == FusedGroup::kStatusNode) return false;
      const Shape& s = impl_->graph.node(id).shape;
      return std::find(s.begin(), s.end(), -1) != s.end();
    });
    k.grid = dynamic ? 0 : L.config.grid[0];
    k.block = planned[i].per_extent || planned[i].buckets ? 0 : L.config.block[0];
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<KernelRecord> Plan::compile(Engine& engine) const {
  detail::EngineImpl& e = detail::impl_of(engine);
  const std::vector<KernelSpec> specs =
      plan_specs(impl_->graph, impl_->fused, {}, nullptr, e.target);
  std::vector<const KernelSpec*> todo;
  for (const KernelSpec& s : specs) todo.push_back(&s);
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
                                   const cache::TuningDb* records, const Target& target) {
  const detail::PlanImpl p(graph, fuse_ops);
  std::vector<KernelSpec> specs;
  std::set<std::string> seen;
  const std::vector<Planned> planned = plan_groups(p, inputs, records, target);
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const Planned& k = planned[i];
    if (k.per_extent)  // cannot be compiled ahead
      throw GraphError(fmt::format(
          "kernel {} (fusing {}) for {} changes with the extent of a dynamic dim ({}), so it "
          "compiles once per extent: give the graph static shapes, or precompile a manifest "
          "recorded with KILN_RECORD",
          k.name(p.groups[i]), fmt::join(p.ops_of(p.groups[i]), ", "), target.arch,
          dynamic_dims(p.graph)));
    if (k.launch.groups && !k.buckets) {  // one per kernel of the plan, as Plan::compile lists
      seen.insert(compiler::spec_id(k.launch.spec));
      specs.push_back(k.launch.spec);
    }
  }
  if (p.dynamic())
    for (KernelSpec& s : extra_specs(p, planned, records, target, seen))
      specs.push_back(std::move(s));
  return specs;
}

std::vector<KernelSpec> plan_specs(const Graph& graph, bool fuse_ops,
                                   const std::map<std::string, TensorView>& inputs,
                                   const cache::TuningDb* records, const std::string& arch) {
  return plan_specs(graph, fuse_ops, inputs, records, target_of(arch));
}

std::vector<KernelSpec> run_specs(const Graph& graph, std::int64_t extent, bool fuse_ops,
                                  const std::string& arch) {
  const detail::PlanImpl p(graph, fuse_ops);
  Graph scratch;
  std::vector<KernelSpec> specs;
  for (KernelLaunch& L :
       specialize_groups(p, p.bound_at(extent, scratch), {}, nullptr, target_of(arch)))
    if (L.groups) specs.push_back(std::move(L.spec));
  return specs;
}

std::vector<KernelSpec> load_specs(const std::string& path, const cache::TuningDb* records,
                                   const std::string& arch) {
  return load_specs(path, records, target_of(arch));
}

std::vector<KernelSpec> load_specs(const std::string& path, const cache::TuningDb* records,
                                   const Target& target) {
  const bool graph = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (!graph) return cache::read_manifest(path);
  return plan_specs(Graph::load(path), fusion_enabled(), {}, records, target);
}

}  // namespace kiln
