#include "engine/fusion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ops/op.hpp"

namespace kiln {
namespace {

using codegen::Ref;

// Fills the body of a group whose steps, inputs and outputs are set.
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
  for (int id : grp.outputs) {
    b.outputs.push_back(g.node(id).dtype);
    b.results.push_back(refs.at(id));
  }
  std::vector<std::string> names;
  for (int id : grp.steps) names.push_back(g.node(id).op);
  if (names.size() > 4) names = {names[0], names[1], names[2], fmt::format("{}_more", names.size() - 3)};
  grp.stem = fmt::format("{}_{}", fmt::join(names, "_"), name_of(g.node(grp.outputs[0]).dtype));
}

}  // namespace

std::vector<FusedGroup> fuse(const Graph& g, bool enabled) {
  std::vector<FusedGroup> groups;
  if (!enabled) {
    // One kernel per op node that an output depends on; every op result is materialized.
    std::set<int> needed;
    std::vector<int> todo = g.outputs();
    while (!todo.empty()) {
      const int id = todo.back();
      todo.pop_back();
      if (!needed.insert(id).second) continue;
      for (const auto& a : g.node(id).args)
        if (std::holds_alternative<int>(a)) todo.push_back(std::get<int>(a));
    }
    for (int id : needed) {  // std::set iterates in id order: topological
      if (g.node(id).op == "input") continue;
      FusedGroup grp;
      grp.steps = {id};
      grp.outputs = {id};
      for (const auto& a : g.node(id).args)
        if (std::holds_alternative<int>(a) &&
            std::find(grp.inputs.begin(), grp.inputs.end(), std::get<int>(a)) == grp.inputs.end())
          grp.inputs.push_back(std::get<int>(a));
      groups.push_back(std::move(grp));
    }
  } else {
    // One kernel per distinct output shape, evaluating every node its outputs depend on.
    std::vector<Shape> shapes;
    for (int id : g.outputs()) {
      const Shape& s = g.node(id).shape;
      auto it = std::find(shapes.begin(), shapes.end(), s);
      if (it == shapes.end()) {
        shapes.push_back(s);
        groups.emplace_back();
        it = shapes.end() - 1;
      }
      groups[std::size_t(it - shapes.begin())].outputs.push_back(id);
    }
    for (FusedGroup& grp : groups) {
      std::set<int> seen, inputs;
      std::vector<int> todo = grp.outputs;
      while (!todo.empty()) {
        const int id = todo.back();
        todo.pop_back();
        if (!seen.insert(id).second) continue;
        if (g.node(id).op == "input") {
          inputs.insert(id);
          continue;
        }
        for (const auto& a : g.node(id).args)
          if (std::holds_alternative<int>(a)) todo.push_back(std::get<int>(a));
      }
      for (int id : seen)
        if (g.node(id).op != "input") grp.steps.push_back(id);
      grp.inputs.assign(inputs.begin(), inputs.end());
    }
  }
  for (FusedGroup& grp : groups) build_body(g, grp);
  return groups;
}

}  // namespace kiln
