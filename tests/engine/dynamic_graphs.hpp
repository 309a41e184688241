#pragma once
// Graphs of a dynamic row length for the tests: the graph, the graph bound to one length, and
// the kernel launch a run of one length specializes.
#include <doctest/doctest.h>

#include <kiln/graph.hpp>
#include <string>
#include <vector>

#include "engine/exec/plan_impl.hpp"

namespace kiln::test {

// softmax or layer_norm (weight and bias of the row's length) over x [rows, ?].
inline kiln::Graph dynamic_row_graph(const std::string& op, std::int64_t rows, kiln::DType t) {
  kiln::Graph g;
  auto x = g.input("x", {rows, -1}, t);
  if (op == "layer_norm")
    g.output(kiln::apply(op, {x, g.input("w", {-1}, t), g.input("b", {-1}, t)}));
  else
    g.output(kiln::apply(op, {x}));
  return g;
}

// `g` with every dynamic dim at `length`, the first one at `batch` if given.
inline kiln::Graph bound(const kiln::Graph& g, std::int64_t length, std::int64_t batch = 0) {
  std::string json = g.to_json();
  for (std::size_t at; (at = json.find("\"?\"")) != std::string::npos; batch = 0)
    json.replace(at, 3, std::to_string(batch ? batch : length));
  return kiln::Graph::parse(json);
}

// The one kernel of `g`'s plan, with its dynamic dims at `length`, as a run on sm_90a
// launches it (a static graph: its kernel for that length).
inline kiln::KernelLaunch launch_at(const kiln::Graph& g, std::int64_t length) {
  const kiln::detail::PlanImpl p(g, true);
  kiln::Graph scratch;
  const kiln::Graph& b = p.bound_at(length, scratch);
  std::vector<kiln::TensorView> values;
  for (const auto& n : b.nodes()) values.push_back(kiln::detail::PlanImpl::desc(n));
  REQUIRE(p.groups.size() == 1);
  return p.specialize(p.groups[0], values, b, kiln::target_of("sm_90a"));
}

}  // namespace kiln::test
