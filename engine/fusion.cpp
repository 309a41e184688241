#include "engine/fusion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace kiln {
namespace {

using codegen::Ref;

bool is_row(const Graph& g, int id) {
  const auto& n = g.node(id);
  return n.op != "input" && ops::find_op(n.op).fusion == ops::FusionClass::row;
}

std::vector<int> tensor_args(const Graph& g, int id) {
  std::vector<int> out;
  for (const auto& a : g.node(id).args)
    if (std::holds_alternative<int>(a)) out.push_back(std::get<int>(a));
  return out;
}

// Elementwise nodes needed to compute `roots` from memory (inputs, row results, or anything in
// `stop`), in topological order; the memory nodes read go to `inputs`.
void collect(const Graph& g, const std::vector<int>& roots, const std::set<int>& stop, FusedGroup& grp) {
  std::set<int> steps, inputs;
  std::vector<int> todo = roots;
  while (!todo.empty()) {
    const int id = todo.back();
    todo.pop_back();
    if (steps.count(id) || inputs.count(id)) continue;
    if (g.node(id).op == "input" || is_row(g, id) || stop.count(id)) {
      inputs.insert(id);
      continue;
    }
    steps.insert(id);
    for (int a : tensor_args(g, id)) todo.push_back(a);
  }
  grp.steps.assign(steps.begin(), steps.end());
  grp.inputs.assign(inputs.begin(), inputs.end());
}

// Fills the body (the elementwise expression, or a row op's prologue) of a collected group.
void build_body(const Graph& g, FusedGroup& grp) {
  codegen::Body& b = grp.body;
  std::map<int, Ref> refs;
  for (std::size_t i = 0; i < grp.inputs.size(); ++i) {
    refs[grp.inputs[i]] = {Ref::Kind::input, int(i)};
    b.inputs.push_back(g.node(grp.inputs[i]).dtype);
  }
  auto scalar = [&](double v) {
    grp.scalars.push_back(float(v));
    return Ref{Ref::Kind::scalar, b.scalars++};
  };
  for (int id : grp.steps) {
    const Graph::Node& n = g.node(id);
    const ops::OpDef& op = ops::find_op(n.op);
    codegen::Step step{std::string(op.functor), {}, op.rule == ops::Rule::cast, n.dtype, n.name};
    for (const auto& a : n.args) step.args.push_back(std::holds_alternative<int>(a) ? refs.at(std::get<int>(a)) : scalar(std::get<double>(a)));
    for (double s : ops::attr_scalars(op, n.attrs)) step.args.push_back(scalar(s));
    refs[id] = {Ref::Kind::step, int(b.steps.size())};
    b.steps.push_back(step);
  }
  std::vector<std::string> names;
  for (int id : grp.steps) names.push_back(g.node(id).op);
  if (names.size() > 4) names = {names[0], names[1], names[2], fmt::format("{}_more", names.size() - 3)};
  if (grp.row) {
    b.outputs = {DType::f32};
    b.results = {refs.at(grp.x)};
    grp.stem = fmt::format("{}{}{}_{}", grp.row->name, names.empty() ? "" : "__", fmt::join(names, "_"),
                           name_of(g.node(grp.outputs[0]).dtype));
    return;
  }
  for (int id : grp.outputs) {
    b.outputs.push_back(g.node(id).dtype);
    b.results.push_back(refs.at(id));
  }
  grp.stem = fmt::format("{}_{}", fmt::join(names, "_"), name_of(g.node(grp.outputs[0]).dtype));
}

FusedGroup row_group(const Graph& g, int id, const std::set<int>& stop) {
  FusedGroup grp;
  grp.row = &ops::find_op(g.node(id).op);
  grp.outputs = {id};
  const std::vector<int> args = tensor_args(g, id);
  grp.x = args[0];
  grp.extras.assign(args.begin() + 1, args.end());
  collect(g, {grp.x}, stop, grp);
  return grp;
}

}  // namespace

std::vector<FusedGroup> fuse(const Graph& g, bool enabled) {
  // The nodes the outputs need, and which of them are materialized.
  std::set<int> needed;
  for (std::vector<int> todo = g.outputs(); !todo.empty();) {
    const int id = todo.back();
    todo.pop_back();
    if (!needed.insert(id).second) continue;
    for (int a : tensor_args(g, id)) todo.push_back(a);
  }
  std::vector<FusedGroup> groups;
  if (!enabled) {
    std::set<int> all(needed.begin(), needed.end());  // every value is materialized
    for (int id : needed) {
      if (g.node(id).op == "input") continue;
      if (is_row(g, id)) {
        groups.push_back(row_group(g, id, all));
      } else {
        FusedGroup grp;
        grp.outputs = {id};
        grp.steps = {id};
        for (int a : tensor_args(g, id))
          if (std::find(grp.inputs.begin(), grp.inputs.end(), a) == grp.inputs.end()) grp.inputs.push_back(a);
        groups.push_back(std::move(grp));
      }
    }
    for (FusedGroup& grp : groups) build_body(g, grp);
    return groups;
  }
  std::set<int> materialized(g.outputs().begin(), g.outputs().end());
  std::map<int, int> depth;  // row ops on the longest path from the inputs
  for (int id : needed) {    // ids ascend: arguments come first
    int d = 0;
    for (int a : tensor_args(g, id)) d = std::max(d, depth[a]);
    depth[id] = d + (is_row(g, id) ? 1 : 0);
    if (is_row(g, id))
      for (std::size_t i = 1; i < tensor_args(g, id).size(); ++i) materialized.insert(tensor_args(g, id)[i]);
  }
  const int max_depth = depth.empty() ? 0 : std::max_element(depth.begin(), depth.end(), [](auto& a, auto& b) { return a.second < b.second; })->second;
  for (int level = 0; level <= max_depth; ++level) {
    // Row ops of this depth (they read only values of lower depths)...
    for (int id : needed)
      if (is_row(g, id) && depth[id] == level) groups.push_back(row_group(g, id, {}));
    // ...then the materialized elementwise values of this depth, one kernel per shape.
    std::vector<Shape> shapes;
    std::vector<FusedGroup> level_groups;
    for (int id : materialized) {
      if (g.node(id).op == "input" || is_row(g, id) || depth[id] != level) continue;
      const Shape& s = g.node(id).shape;
      auto it = std::find(shapes.begin(), shapes.end(), s);
      if (it == shapes.end()) {
        shapes.push_back(s);
        level_groups.emplace_back();
        it = shapes.end() - 1;
      }
      level_groups[std::size_t(it - shapes.begin())].outputs.push_back(id);
    }
    for (FusedGroup& grp : level_groups) {
      collect(g, grp.outputs, {}, grp);
      groups.push_back(std::move(grp));
    }
  }
  for (FusedGroup& grp : groups) build_body(g, grp);
  return groups;
}

}  // namespace kiln
