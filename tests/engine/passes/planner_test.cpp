// The arena planner: values whose lives overlap never share bytes; values that do not, do.
#include "engine/passes/planner.hpp"

#include <doctest/doctest.h>

#include <kiln/graph.hpp>

#include "tests/fuzz/generator.hpp"

using kiln::DType;
using kiln::Graph;

namespace {
// Overlapping lives never overlap in bytes; offsets aligned; everything inside the arena.
void check_arena(const Graph& g, const kiln::ArenaPlan& p) {
  for (std::size_t a = 0; a < p.offset.size(); ++a) {
    if (p.offset[a] < 0) continue;
    CHECK(p.offset[a] % kiln::ArenaPlan::kAlign == 0);
    CHECK(p.offset[a] + p.size[a] <= p.bytes);
    CHECK(p.size[a] >=
          kiln::numel_of(g.nodes()[a].shape) * std::int64_t(kiln::size_of(g.nodes()[a].dtype)));
    for (std::size_t b = a + 1; b < p.offset.size(); ++b) {
      if (p.offset[b] < 0 || p.last[a] < p.first[b] || p.last[b] < p.first[a]) continue;
      CHECK((p.offset[a] + p.size[a] <= p.offset[b] || p.offset[b] + p.size[b] <= p.offset[a]));
    }
  }
  CHECK(p.bytes <= p.unshared);
}
}  // namespace

TEST_CASE("planner: a chain reuses two slots; a value read late keeps its own") {
  Graph g;
  auto x = g.input("x", {1000}, DType::f32);
  auto a = kiln::exp(x);
  auto e = kiln::tanh(kiln::neg(kiln::relu(kiln::abs(a))));  // b, c, d, e
  g.output(kiln::silu(e));
  const auto chain = kiln::plan_arena(g, kiln::fuse(g, false));
  check_arena(g, chain);
  CHECK(chain.values == 5);           // a..e; the output is the caller's
  CHECK(chain.unshared == 5 * 4096);  // 4000 bytes each, rounded up to 256
  CHECK(chain.bytes == 2 * 4096);     // each value dies as the next one's kernel runs

  Graph h;
  auto y = h.input("y", {1000}, DType::f32);
  auto p = kiln::exp(y);
  h.output(kiln::tanh(kiln::neg(kiln::relu(p))) + p);  // p read again by the last kernel
  const auto late = kiln::plan_arena(h, kiln::fuse(h, false));
  check_arena(h, late);
  CHECK(late.bytes == 3 * 4096);
  CHECK(kiln::plan_arena(h, kiln::fuse(h, true)).values == 0);  // fused: one kernel, nothing stored
}

TEST_CASE("planner: lives never share bytes, over random graphs fused and unfused") {
  int with_arena = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const Graph g = kiln::fuzz::random_graph(seed);
    for (bool fused : {true, false}) {
      CAPTURE(seed);
      CAPTURE(fused);
      const auto p = kiln::plan_arena(g, kiln::fuse(g, fused));
      check_arena(g, p);
      with_arena += p.values > 1;
    }
  }
  CHECK(with_arena > 100);  // the property was exercised, not vacuously true
}
