// The executor: Plan::run launches a plan's kernels one by one; Plan::replay builds a CUDA graph
// of them once and replays it. A call whose signature (engine/exec/launch_cache.hpp) was seen
// before skips binding and specialization: it writes its data pointers into the prepared parameter
// blocks and launches (run), or replays the graph, updating only the nodes whose pointers
// changed (replay). Intermediates live in one arena per signature, laid out by engine/planner.
#include "engine/exec/executor.hpp"

#include <fmt/format.h>

#include <kiln/graph.hpp>

#include "engine/exec/engine_impl.hpp"
#include "engine/exec/gather_status.hpp"
#include "engine/exec/workspace.hpp"
#include "engine/exec/plan_impl.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/driver.hpp"
#include "engine/runtime/nvtx.hpp"

namespace kiln {
namespace detail {

std::uint64_t PlanImpl::arena_for(Engine& engine, std::int64_t bytes) const {
  std::lock_guard<std::mutex> lock(arenas_mutex);
  const std::uint64_t serial = detail::impl_of(engine).serial;
  auto it =
      std::find_if(arenas.begin(), arenas.end(), [&](const auto& a) { return a.first == serial; });
  if (it == arenas.end()) it = arenas.insert(arenas.end(), {serial, Tensor()});
  Tensor& arena = it->second;
  if (arena.view().data == 0 || std::int64_t(arena.bytes()) < bytes) {
    if (arena.view().data != 0)
      engine.synchronize();                         // work queued earlier may still use the old one
    arena = engine.empty({bytes / 4}, DType::f32);  // bytes: a multiple of 256
  }
  return arena.view().data;
}

namespace {

// The signature of a call, or false when the call names inputs or outputs the graph lacks, or
// leaves an input out (the slow path then says which).
bool call_signature(const PlanImpl& p, const EngineImpl& e,
                    const std::map<std::string, TensorView>& inputs,
                    const std::map<std::string, TensorView>& outputs, Signature& s) {
  s.add(std::int64_t(e.serial));
  std::size_t found = 0;
  for (const auto& n : p.graph.nodes()) {
    if (n.op != "input") continue;
    auto it = inputs.find(n.name);
    if (it == inputs.end()) return false;
    s.add_view(it->second);
    ++found;
  }
  if (found != inputs.size()) return false;
  found = 0;
  for (int o : p.graph.outputs()) {
    auto it = outputs.find(p.graph.node(o).name);
    s.add(it != outputs.end());
    if (it == outputs.end()) continue;
    s.add_view(it->second);
    ++found;
  }
  return found == outputs.size();
}

// Checks the inputs and outputs, binds dynamic dims, plans the arena and specializes every
// kernel: the first call of a signature. Data pointers in the launches are placeholders (0 for
// made outputs and intermediates, as aligned as allocations are) that every call rewrites.
std::shared_ptr<PreparedCall> prepare_call(const PlanImpl& p, Engine& engine,
                                           const std::map<std::string, TensorView>& inputs,
                                           const std::map<std::string, TensorView>& outputs,
                                           bool need_device) {
  for (const auto& [name, v] : inputs)
    if (p.graph.find(name) < 0 || p.graph.node(p.graph.find(name)).op != "input")
      throw GraphError(fmt::format("'{}' is not an input of the graph", printable_name(name)));
  Graph scratch;
  const Graph& bound =
      p.bind(inputs, scratch);  // checks the inputs before anything touches the GPU
  for (const auto& [name, v] : inputs) check_view(v, fmt::format("input '{}':", name));
  for (const auto& [name, v] : outputs) {
    const int id = bound.find(name);
    const auto& outs = bound.outputs();
    if (id < 0 || std::find(outs.begin(), outs.end(), id) == outs.end())
      throw GraphError(fmt::format("'{}' is not an output of the graph", printable_name(name)));
    if (v.shape != bound.node(id).shape || v.dtype != bound.node(id).dtype)
      throw ShapeError(fmt::format("output '{}': got {}, the result is {}{}", name, v.describe(),
                                   name_of(bound.node(id).dtype), to_string(bound.node(id).shape)));
    check_view(v, fmt::format("output '{}':", name));
  }
  EngineImpl& e = detail::impl_of(engine);
  if (need_device) e.require_device("running a plan");
  auto call = std::make_shared<PreparedCall>();
  const ArenaPlan memory = p.arena ? *p.arena : plan_arena(bound, p.groups);
  call->arena_bytes = memory.bytes;
  call->arena_offset = memory.offset;
  call->aliases = view_aliases(bound, p.groups);
  std::vector<TensorView> values(bound.nodes().size());
  for (std::size_t id = 0; id < bound.nodes().size(); ++id) {
    const Graph::Node& n = bound.nodes()[id];
    values[id].shape = n.shape;
    values[id].dtype = n.dtype;
    if (n.op == "input") values[id] = inputs.at(n.name);
  }
  std::set<int> given;
  for (int o : bound.outputs()) {
    const Graph::Node& n = bound.node(o);
    if (auto it = outputs.find(n.name); it != outputs.end())
      values[std::size_t(o)] = it->second, given.insert(o);
    else
      call->made.push_back({n.name, o, n.shape, n.dtype, {}});
  }
  view_values(bound, p.groups, values, given);
  for (PreparedCall::Made& m : call->made) m.strides = values[std::size_t(m.node)].strides;
  std::vector<std::pair<const FusedGroup*, KernelLaunch>> work;
  std::vector<const KernelSpec*> specs;
  for (const FusedGroup& grp : p.groups) {
    KernelLaunch L = p.specialize_tuned(grp, values, bound, e.target, e.tuning);
    if (L.groups != 0 && !L.config.empty()) work.emplace_back(&grp, std::move(L));
  }
  for (const auto& w : work) specs.push_back(&w.second.spec);
  const std::vector<const LoadedKernel*> kernels = e.prepare_all(specs);  // compiled side by side
  for (std::size_t i = 0; i < work.size(); ++i) {
    const FusedGroup& grp = *work[i].first;
    KernelLaunch& L = work[i].second;
    std::vector<int> nodes = grp.pointer_nodes();
    if (nodes.size() + (L.workspace ? 1 : 0) != L.pointers.size())
      throw Error(fmt::format("internal error: kernel {} takes {} pointers for {} values",
                              L.spec.name, L.pointers.size(), nodes.size()));
    const LaunchConfig config = kernels[i]->config_for(L);
    PreparedCall::Launch launch = prepared_launch(std::move(L), *kernels[i], config);
    launch.nodes = std::move(nodes);
    launch.label = describe_group(bound, grp);
    if (!grp.index_inputs.empty()) describe_gathers(bound, grp, values, *call, launch);
    call->launches.push_back(std::move(launch));
  }
  call->data.assign(bound.nodes().size(), 0);
  return call;
}

runtime::GraphLaunch graph_launch(PreparedCall::Launch& l) {
  return {l.kernel->module->function(), l.config, l.params->pointers()};
}

}  // namespace

std::map<std::string, Tensor> bind_data(PreparedCall& call, const PlanImpl& plan, Engine& engine,
                                        const std::map<std::string, TensorView>& inputs,
                                        const std::map<std::string, TensorView>& outputs) {
  for (const auto& [name, v] : inputs) {
    if (!view_ok(v)) check_view(v, fmt::format("input '{}':", name));
    call.data[std::size_t(plan.graph.find(name))] = v.data;
  }
  for (const auto& [name, v] : outputs) {
    if (!view_ok(v)) check_view(v, fmt::format("output '{}':", name));
    call.data[std::size_t(plan.graph.find(name))] = v.data;
  }
  std::map<std::string, Tensor> made;
  for (const PreparedCall::Made& m : call.made) {
    Tensor t = engine.empty(m.shape, m.dtype);
    if (!m.strides.empty()) t = t.with_strides(m.strides);
    call.data[std::size_t(m.node)] = t.view().data;
    made.emplace(m.name, std::move(t));
  }
  const std::uint64_t arena = call.arena_bytes > 0 ? plan.arena_for(engine, call.arena_bytes) : 0;
  for (std::size_t id = 0; id < call.arena_offset.size(); ++id)
    if (call.arena_offset[id] >= 0) call.data[id] = arena + std::uint64_t(call.arena_offset[id]);
  for (const auto& [view, src] : call.aliases)  // in node order: a view of a view follows
    call.data[std::size_t(view)] = call.data[std::size_t(src)];
  for (PreparedCall::Launch& l : call.launches)
    for (std::size_t i = 0; i < l.nodes.size(); ++i)
      if (l.nodes[i] != FusedGroup::kStatusNode)  // bind_status's
        l.params->set_pointer(i, call.data[std::size_t(l.nodes[i])]);
  return made;
}

std::shared_ptr<PreparedCall> PlanImpl::prepared(Engine& engine,
                                                 const std::map<std::string, TensorView>& inputs,
                                                 const std::map<std::string, TensorView>& outputs,
                                                 bool need_device) const {
  Signature s;
  if (!call_signature(*this, detail::impl_of(engine), inputs, outputs, s))
    return prepare_call(*this, engine, inputs, outputs, need_device);
  if (auto hit = calls->find(s)) {
    detail::impl_of(engine).cache->count_memory_hit(
        hit->launches.size());  // as a lookup of each kernel would
    return hit;
  }
  return calls->insert(s, prepare_call(*this, engine, inputs, outputs, need_device));
}

namespace {

// What run and replay share: the call prepared for this signature, its data pointers bound, and
// `launch(call, stream)` under the call's lock with the engine's context current (not when the
// plan has nothing to launch). Returns the outputs the call made.
template <class Launch>
std::map<std::string, Tensor> bind_and_launch(PlanImpl& p, Engine& engine,
                                              const std::map<std::string, TensorView>& inputs,
                                              const std::map<std::string, TensorView>& outputs,
                                              const Launch& launch) {
  const std::shared_ptr<PreparedCall> call = p.prepared(engine, inputs, outputs);
  detail::impl_of(engine).require_device("running a plan");  // a hit prepared on an offline engine
  std::lock_guard<std::mutex> lock(call->mutex);
  std::map<std::string, Tensor> made = bind_data(*call, p, engine, inputs, outputs);
  if (call->launches.empty()) return made;
  bind_status(*call, engine);
  bind_workspace(*call, engine);
  runtime::ContextGuard guard(*detail::impl_of(engine).context);  // LaunchParams::pointers()
  launch(*call, static_cast<CUstream>(engine.stream()));
  check_status(*call, static_cast<CUstream>(engine.stream()));
  return made;
}

}  // namespace
}  // namespace detail

std::map<std::string, Tensor> Plan::run(Engine& engine,
                                        const std::map<std::string, TensorView>& inputs,
                                        const std::map<std::string, TensorView>& outputs) const {
  const runtime::NvtxRange range("kiln::Plan::run");
  return detail::bind_and_launch(
      *impl_, engine, inputs, outputs, [](detail::PreparedCall& call, CUstream stream) {
        for (detail::PreparedCall::Launch& l : call.launches) {
          const runtime::NvtxRange launch(l.label.c_str());
          l.kernel->module->launch(l.config, stream, l.params->pointers());
        }
      });
}

std::map<std::string, Tensor> Plan::replay(Engine& engine,
                                           const std::map<std::string, TensorView>& inputs,
                                           const std::map<std::string, TensorView>& outputs) const {
  const runtime::NvtxRange range("kiln::Plan::replay");
  return detail::bind_and_launch(*impl_, engine, inputs, outputs,
                                 [](detail::PreparedCall& call, CUstream stream) {
                                   if (!call.graph) {
                                     std::vector<runtime::GraphLaunch> launches;
                                     for (auto& l : call.launches)
                                       launches.push_back(detail::graph_launch(l));
                                     call.graph = std::make_unique<runtime::KernelGraph>(launches);
                                     for (auto& l : call.launches)
                                       l.in_graph = l.params->pointer_bytes(l.nodes.size());
                                   } else {
                                     for (std::size_t i = 0; i < call.launches.size(); ++i) {
                                       detail::PreparedCall::Launch& l = call.launches[i];
                                       if (l.params->pointers_equal(l.in_graph))
                                         continue;  // the node already holds these pointers
                                       call.graph->update(i, detail::graph_launch(l));
                                       l.in_graph = l.params->pointer_bytes(l.nodes.size());
                                     }
                                   }
                                   call.graph->launch(stream);
                                 });
}

}  // namespace kiln
