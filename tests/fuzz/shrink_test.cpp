// The fuzz shrinker, driven by made-up failure predicates on a wide 36-node graph.
#include "tests/fuzz/shrink.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

namespace {
std::string wide_graph() {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/tests/fuzz/data/wide-graph.json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "Fails" when some output depends on a layer_norm over rows of 7 or more.
bool has_wide_layer_norm(const kiln::Graph& g) {
  std::vector<int> todo = g.outputs();
  while (!todo.empty()) {
    const auto& n = g.node(todo.back());
    todo.pop_back();
    if (n.op == "layer_norm" && n.shape.back() >= 7) return true;
    for (const auto& a : n.args)
      if (std::holds_alternative<int>(a)) todo.push_back(std::get<int>(a));
  }
  return false;
}
}  // namespace

TEST_CASE("fuzz shrinker: keeps only what the failure needs") {
  const kiln::Graph big = kiln::Graph::parse(wide_graph());
  REQUIRE(big.nodes().size() > 30);
  REQUIRE(has_wide_layer_norm(big));
  int calls = 0;
  const kiln::Graph small =
      kiln::Graph::parse(kiln::fuzz::shrink(wide_graph(), [&](const kiln::Graph& g) {
        ++calls;
        return has_wide_layer_norm(g);
      }));
  CHECK(has_wide_layer_norm(small));
  int ops = 0;
  for (const auto& n : small.nodes()) {
    if (n.op == "input") {
      // 256 halves down to 1; 31 halves to 7, and then 7 only halves together with the last dim
      CHECK(n.shape == kiln::Shape{7, 1, 7});
    } else {
      ++ops;
      CHECK(n.op == "layer_norm");
    }
  }
  CHECK(ops == 1);
  CHECK(small.nodes().size() == 2);  // inputs nothing reads are dropped
  CHECK(calls < 400);
}

TEST_CASE("fuzz shrinker: a predicate that throws or never fails leaves the graph as it is") {
  const std::string text = wide_graph();
  const auto same = [&](const std::string& out) {
    return kiln::Graph::parse(out).to_json() == kiln::Graph::parse(text).to_json();
  };
  CHECK(same(kiln::fuzz::shrink(
      text, [](const kiln::Graph&) -> bool { throw std::runtime_error("boom"); })));
  CHECK(same(kiln::fuzz::shrink(text, [](const kiln::Graph&) { return false; })));
}
