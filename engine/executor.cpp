// The executor: Plan::run launches a plan's kernels one by one; Plan::replay builds a CUDA graph
// of them once and replays it, updating parameters in place. Intermediates live in one arena
// laid out by engine/planner.
#include <fmt/format.h>

#include <kiln/graph.hpp>

#include "engine/engine_impl.hpp"
#include "engine/plan_impl.hpp"
#include "engine/runtime/context.hpp"

namespace kiln {
namespace {

// One call's kernels bound to memory, and the outputs it allocated.
struct BoundRun {
  std::vector<KernelLaunch> launches;
  std::map<std::string, Tensor> made;
  std::int64_t arena_bytes = 0;  ///< what the intermediates take (0: none)
};

// Checks the inputs, binds dynamic dims, places the outputs (the caller's views, else new
// tensors) and the intermediates (in `arena`, replaced when too small, the old one freed only
// after a synchronize), and specializes every kernel.
BoundRun bind_run(const detail::PlanImpl& p, Engine& engine, const std::map<std::string, TensorView>& inputs,
                  const std::map<std::string, TensorView>& outputs, Tensor& arena) {
  for (const auto& [name, v] : inputs)
    if (p.graph.find(name) < 0 || p.graph.node(p.graph.find(name)).op != "input")
      throw GraphError(fmt::format("'{}' is not an input of the graph", name));
  Graph scratch;
  const Graph& bound = p.bind(inputs, scratch);  // checks the inputs before anything touches the GPU
  for (const auto& [name, v] : inputs) check_view(v, fmt::format("input '{}':", name));
  for (const auto& [name, v] : outputs) {
    const int id = bound.find(name);
    const auto& outs = bound.outputs();
    if (id < 0 || std::find(outs.begin(), outs.end(), id) == outs.end())
      throw GraphError(fmt::format("'{}' is not an output of the graph", name));
    if (v.shape != bound.node(id).shape || v.dtype != bound.node(id).dtype)
      throw ShapeError(fmt::format("output '{}': got {}, the result is {}{}", name, v.describe(),
                                   name_of(bound.node(id).dtype), to_string(bound.node(id).shape)));
    check_view(v, fmt::format("output '{}':", name));
  }
  engine.impl().require_device("running a plan");
  ArenaPlan planned;  // the bound shapes' plan, when the graph has dynamic dims
  const ArenaPlan& memory = p.arena ? *p.arena : (planned = plan_arena(bound, p.groups));
  BoundRun run;
  run.arena_bytes = memory.bytes;
  if (memory.bytes > 0 && (arena.view().data == 0 || std::int64_t(arena.bytes()) < memory.bytes)) {
    if (arena.view().data != 0) engine.synchronize();  // work queued earlier may still use the old one
    arena = engine.empty({memory.bytes / 4}, DType::f32);  // bytes: a multiple of 256
  }
  std::vector<TensorView> values(bound.nodes().size());
  for (std::size_t id = 0; id < bound.nodes().size(); ++id) {
    const Graph::Node& n = bound.nodes()[id];
    TensorView& slot = values[id];
    if (n.op == "input") {
      slot = inputs.at(n.name);
    } else if (memory.offset[id] >= 0) {
      slot.data = arena.view().data + std::uint64_t(memory.offset[id]);
      slot.shape = n.shape;
      slot.dtype = n.dtype;
    }
  }
  for (int o : bound.outputs()) {
    const Graph::Node& n = bound.node(o);
    if (auto it = outputs.find(n.name); it != outputs.end()) {
      values[std::size_t(o)] = it->second;
    } else {
      run.made[n.name] = engine.empty(n.shape, n.dtype);
      values[std::size_t(o)] = run.made[n.name].view();
    }
  }
  for (const FusedGroup& grp : p.groups) run.launches.push_back(p.specialize_tuned(grp, values, bound, engine.arch(), engine.impl().tuning));
  return run;
}

}  // namespace

std::map<std::string, Tensor> Plan::run(Engine& engine, const std::map<std::string, TensorView>& inputs,
                                        const std::map<std::string, TensorView>& outputs) const {
  Tensor arena;
  BoundRun run = bind_run(*impl_, engine, inputs, outputs, arena);
  for (const KernelLaunch& L : run.launches) engine.impl().launch_kernel(L);
  if (run.arena_bytes) engine.synchronize();  // the arena is freed on return
  return std::move(run.made);
}

std::map<std::string, Tensor> Plan::replay(Engine& engine, const std::map<std::string, TensorView>& inputs,
                                           const std::map<std::string, TensorView>& outputs) const {
  detail::PlanImpl::Replay& r = *impl_->replay;
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.context.lock() != engine.impl().context) {  // a graph belongs to one engine's context
    r.graph.reset();
    r.arena = Tensor();
    r.context = engine.impl().context;
  }
  BoundRun run = bind_run(*impl_, engine, inputs, outputs, r.arena);
  std::vector<std::unique_ptr<LaunchParams>> params;
  std::vector<runtime::GraphLaunch> launches;
  std::vector<std::string> kernels;
  for (const KernelLaunch& L : run.launches) {
    if (L.groups == 0 || L.grid == 0) continue;
    const detail::LoadedKernel& k = engine.impl().prepare(L.spec);
    params.push_back(std::make_unique<LaunchParams>(L));
    launches.push_back({k.module->function(), L.grid, L.block, k.shared_for(L), params.back()->pointers()});
    kernels.push_back(fmt::format("{} {} {} {}", k.compiled->spec_id, L.grid, L.block, launches.back().shared));
  }
  runtime::ContextGuard guard(*engine.impl().context);
  if (!r.graph || kernels != r.kernels) {
    r.graph = launches.empty() ? nullptr : std::make_unique<runtime::KernelGraph>(launches);
    r.kernels = kernels;
    r.params.clear();
    for (const auto& p : params) r.params.push_back(p->bytes());
  } else {
    for (std::size_t i = 0; i < launches.size(); ++i)
      if (std::vector<unsigned char> b = params[i]->bytes(); b != r.params[i]) {
        r.graph->update(i, launches[i]);
        r.params[i] = std::move(b);
      }
  }
  if (r.graph) r.graph->launch(static_cast<CUstream>(engine.stream()));
  return std::move(run.made);
}

}  // namespace kiln
