// Plans: a fused graph bound to tensors and launched on an engine.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include <kiln/graph.hpp>

#include "cache/manifest.hpp"
#include "engine/elementwise.hpp"
#include "engine/engine_impl.hpp"
#include "engine/fusion.hpp"
#include "engine/rows.hpp"

namespace kiln {
namespace detail {

class PlanImpl {
 public:
  PlanImpl(const Graph& g, bool fuse_ops) : graph(g), fused(fuse_ops), groups(fuse(g, fuse_ops)) {}
  Graph graph;
  bool fused;
  std::vector<FusedGroup> groups;

  bool dynamic() const {
    for (const auto& n : graph.nodes())
      for (auto e : n.shape)
        if (e < 0) return true;
    return false;
  }

  // The graph with every dynamic dim bound from the inputs' shapes (ShapeError if they clash).
  Graph bind(const std::map<std::string, TensorView>& inputs) const {
    Graph g;
    for (const auto& n : graph.nodes()) {
      std::vector<GraphArg> args;
      for (const auto& a : n.args)
        args.push_back(std::holds_alternative<int>(a) ? GraphArg(Value(&g, std::get<int>(a))) : GraphArg(std::get<double>(a)));
      if (n.op != "input") {
        g.add(n.op, args, n.attrs, n.name);
        continue;
      }
      auto it = inputs.find(n.name);
      if (it == inputs.end()) throw GraphError(fmt::format("input '{}' was not given", n.name));
      const TensorView& v = it->second;
      if (v.dtype != n.dtype)
        throw DtypeError(fmt::format("input '{}': got {}, the graph wants {}", n.name, v.describe(), name_of(n.dtype)));
      bool fits = v.shape.size() == n.shape.size();
      for (std::size_t d = 0; fits && d < n.shape.size(); ++d) fits = n.shape[d] < 0 || n.shape[d] == v.shape[d];
      if (!fits)
        throw ShapeError(fmt::format("input '{}': got {}, the graph wants {}", n.name, v.describe(), to_string(n.shape)));
      g.input(n.name, v.shape, v.dtype);
    }
    for (int o : graph.outputs()) g.output(Value(&g, o));
    return g;
  }

  // Views of contiguous, aligned stand-ins (data 0) for specializing without memory.
  static TensorView desc(const Graph::Node& n) {
    TensorView v;
    v.shape = n.shape;
    v.dtype = n.dtype;
    return v;
  }

  // `g` gives the shapes (the bound graph when running, the graph itself when static).
  KernelLaunch specialize(const FusedGroup& grp, const std::vector<TensorView>& values, const Graph& g) const {
    auto views = [&](const std::vector<int>& ids) {
      std::vector<TensorView> out;
      for (int id : ids) out.push_back(values[std::size_t(id)]);
      return out;
    };
    if (!grp.row) return specialize_elementwise(grp.body, grp.stem, views(grp.outputs), views(grp.inputs), grp.scalars);
    RowKernel k;
    k.op = grp.row;
    k.prologue = grp.body;
    k.epilogue = grp.epilogue;
    k.outputs = views(grp.outputs);
    k.inputs = views(grp.inputs);
    k.extras = views(grp.extras);
    k.epilogue_inputs = views(grp.epilogue_inputs);
    k.scalars = grp.scalars;
    k.epilogue_scalars = grp.epilogue_scalars;
    k.eps = ops::eps_of(g.node(grp.row_node).attrs);
    return specialize_rows(k, grp.stem, g.node(grp.x).shape);
  }
};

}  // namespace detail

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

std::map<std::string, Tensor> Plan::run(Engine& engine, const std::map<std::string, TensorView>& inputs,
                                        const std::map<std::string, TensorView>& outputs) const {
  for (const auto& [name, v] : inputs)
    if (impl_->graph.find(name) < 0 || impl_->graph.node(impl_->graph.find(name)).op != "input")
      throw GraphError(fmt::format("'{}' is not an input of the graph", name));
  const Graph bound = impl_->bind(inputs);  // checks the inputs before anything touches the GPU
  engine.impl().require_device("running a plan");
  std::vector<TensorView> values(bound.nodes().size());
  std::map<std::string, Tensor> made;
  std::vector<Tensor> scratch;
  std::vector<bool> is_output(bound.nodes().size(), false);
  for (int o : bound.outputs()) is_output[std::size_t(o)] = true;
  for (std::size_t id = 0; id < bound.nodes().size(); ++id)
    if (bound.nodes()[id].op == "input") values[id] = inputs.at(bound.nodes()[id].name);
  // Outputs: the caller's views, else new tensors. Intermediates (unfused plans): scratch.
  for (const FusedGroup& grp : impl_->groups)
    for (int id : grp.outputs) {
      const Graph::Node& n = bound.node(id);
      TensorView& slot = values[std::size_t(id)];
      if (is_output[std::size_t(id)]) {
        if (auto it = outputs.find(n.name); it != outputs.end()) {
          if (it->second.shape != n.shape || it->second.dtype != n.dtype)
            throw ShapeError(fmt::format("output '{}': got {}, the result is {}{}", n.name, it->second.describe(),
                                         name_of(n.dtype), to_string(n.shape)));
          slot = it->second;
        } else {
          made[n.name] = engine.empty(n.shape, n.dtype);
          slot = made[n.name].view();
        }
      } else {
        scratch.push_back(engine.empty(n.shape, n.dtype));
        slot = scratch.back().view();
      }
    }
  for (const FusedGroup& grp : impl_->groups) engine.impl().launch_kernel(impl_->specialize(grp, values, bound));
  if (!scratch.empty()) engine.synchronize();  // Note: scratch is freed on return
  return made;
}

}  // namespace kiln
