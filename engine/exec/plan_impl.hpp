#pragma once
// What a Plan holds: its graph, its kernels (fused groups), and the state of its CUDA graph.

#include <fmt/format.h>

#include <algorithm>
#include <kiln/graph.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/tuning.hpp"
#include "engine/exec/launch_cache.hpp"
#include "engine/families/family.hpp"
#include "engine/ir/graph_ops.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/passes/planner.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/graph.hpp"

namespace kiln {
namespace detail {

struct PreparedCall;

class PlanImpl {
 public:
  PlanImpl(const Graph& g, bool fuse_ops) : graph(g), fused(fuse_ops), groups(fuse(g, fuse_ops)) {
    analyze_groups(graph, groups);
    if (!dynamic()) arena = plan_arena(graph, groups);
  }
  Graph graph;
  bool fused;
  std::vector<FusedGroup> groups;
  std::optional<ArenaPlan> arena;  ///< planned once when no dim is dynamic, else per run

  /// What each call signature seen prepared (engine/exec/executor.cpp): its kernels, loaded, with
  /// their parameter blocks; its arena; replay's CUDA graph.
  std::unique_ptr<SignatureCache<PreparedCall>> calls =
      std::make_unique<SignatureCache<PreparedCall>>(16);
  mutable std::mutex arenas_mutex;
  mutable std::vector<std::pair<std::uint64_t, Tensor>> arenas;  ///< by engine serial

  bool dynamic() const {
    for (const auto& n : graph.nodes())
      for (auto e : n.shape)
        if (e < 0) return true;
    return false;
  }

  // Checks that every input is given with the graph's dtype and a shape that fits (dynamic
  // dims match anything): GraphError, DtypeError or ShapeError naming the input.
  void check_inputs(const std::map<std::string, TensorView>& inputs) const {
    for (const auto& n : graph.nodes()) {
      if (n.op != "input") continue;
      auto it = inputs.find(n.name);
      if (it == inputs.end()) throw GraphError(fmt::format("input '{}' was not given", n.name));
      const TensorView& v = it->second;
      if (v.dtype != n.dtype)
        throw DtypeError(fmt::format("input '{}': got {}, the graph wants {}", n.name, v.describe(),
                                     name_of(n.dtype)));
      bool fits = v.shape.size() == n.shape.size();
      for (std::size_t d = 0; fits && d < n.shape.size(); ++d)
        fits = n.shape[d] < 0 || n.shape[d] == v.shape[d];
      if (!fits)
        throw ShapeError(fmt::format("input '{}': got {}, the graph wants {}", n.name, v.describe(),
                                     to_string(n.shape)));
    }
  }

  // The graph with every dynamic dim bound from the inputs' shapes (ShapeError if they clash),
  // after check_inputs. A static graph is its own binding: `scratch` is left alone and `graph`
  // returned (no copy, no shape inference: that cost ~2 us per node on every run).
  const Graph& bind(const std::map<std::string, TensorView>& inputs, Graph& scratch) const {
    check_inputs(inputs);
    if (dynamic()) {
      scratch = Graph();
      detail::GraphAccess::copy_declarations(graph, scratch);  // parsed once, shared
      for (const auto& n : graph.nodes()) {
        std::vector<GraphArg> args;
        for (const auto& a : n.args)
          args.push_back(std::holds_alternative<int>(a)
                             ? GraphArg(Value(&scratch, std::get<int>(a)))
                             : GraphArg(std::get<double>(a)));
        if (n.op == "input")
          scratch.input(n.name, inputs.at(n.name).shape, n.dtype);
        else
          scratch.add(n.op, args, n.attrs, n.name);
      }
      for (int o : graph.outputs()) scratch.output(Value(&scratch, o));
      return scratch;
    }
    return graph;
  }

  // The graph with every dynamic dim bound to `extent` (`scratch` holds it), for specializing
  // without inputs: kernels that do not change with the extent are the launches' (a batch).
  const Graph& bound_at(std::int64_t extent, Graph& scratch) const {
    std::map<std::string, TensorView> inputs;
    for (const auto& n : graph.nodes())
      if (n.op == "input") {
        TensorView v = desc(n);
        for (auto& e : v.shape) e = e < 0 ? extent : e;
        inputs[n.name] = v;
      }
    return bind(inputs, scratch);
  }

  // The names of the graph nodes `grp` fused, in order.
  std::vector<std::string> ops_of(const FusedGroup& grp) const {
    std::vector<std::string> ops;
    for (int id : grp.steps) ops.push_back(graph.node(id).name);
    if (grp.anchor) ops.push_back(graph.node(grp.anchor_node).name);
    for (int id : grp.epilogue_views) ops.push_back(graph.node(id).name);
    for (int id : grp.epilogue_steps) ops.push_back(graph.node(id).name);
    // Outputs computed beside the anchor: slices of a product's columns its kernel writes, a
    // result joining it (attention_lse).
    for (int id : grp.outputs) {
      const std::string& name = graph.node(id).name;
      if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
    }
    return ops;
  }

  // What the call of this signature prepared (engine/exec/executor.cpp): found by its signature, or
  // made now (checking inputs and outputs, then, on an engine with a device unless
  // `need_device` is false, specializing and loading every kernel) and kept.
  std::shared_ptr<PreparedCall> prepared(Engine& engine,
                                         const std::map<std::string, TensorView>& inputs,
                                         const std::map<std::string, TensorView>& outputs,
                                         bool need_device = true) const;

  // The arena `engine`'s calls keep their intermediates in, at least `bytes` long: one per
  // engine, shared by every signature, grown (after a synchronize) when a call needs more.
  std::uint64_t arena_for(Engine& engine, std::int64_t bytes) const;

  // Views of contiguous, aligned stand-ins (data 0) for specializing without memory.
  static TensorView desc(const Graph::Node& n) {
    TensorView v;
    v.shape = n.shape;
    v.dtype = n.dtype;
    return v;
  }

  // `grp`'s kernel by its family (engine/families): `g` gives the shapes (the bound graph when
  // running, the graph itself when static); `target` the arch and its limits. `tunables`: the
  // template's parameters (missing ones: the default).
  KernelLaunch specialize(const FusedGroup& grp, const std::vector<TensorView>& values,
                          const Graph& g, const Target& target,
                          const Tunables& tunables = {}) const {
    return specialize_group({grp, values, g, graph, target}, tunables);
  }

  // The kernel as `records` (one GPU's) tuned it: the record whose signature is the default
  // kernel's spec id, else the default. A record whose tunables no longer fit is ignored.
  KernelLaunch specialize_tuned(const FusedGroup& grp, const std::vector<TensorView>& values,
                                const Graph& g, const Target& target,
                                const cache::TuningDb& records) const {
    return kiln::specialize_tuned({grp, values, g, graph, target}, records);
  }
};

}  // namespace detail

}  // namespace kiln
