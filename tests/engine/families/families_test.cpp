// The family registry: every fused group is claimed by exactly one family, the one whose
// template computes it; launches name their family; each family's headers are kiln's; eager
// calls take their kernels from the families as plans do.
#include <doctest/doctest.h>

#include <kiln/graph.hpp>
#include <set>
#include <string>

#include "engine/compiler/headers.hpp"
#include "engine/exec/op_call.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/family.hpp"
#include "engine/passes/fusion.hpp"
#include "ops/op.hpp"
#include "tests/engine/dynamic_graphs.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

namespace {

kiln::Attrs axis(std::int64_t a) { return kiln::Attrs().set("axis", a); }

// The families claiming each group of `g`'s plan, by name, and the launches' families.
std::vector<std::string> claimed(const Graph& g) {
  std::vector<kiln::TensorView> values;
  for (const auto& n : g.nodes()) values.push_back(kiln::test::desc(n.shape, n.dtype));
  std::vector<std::string> out;
  for (const kiln::FusedGroup& grp : kiln::fuse(g, true)) {
    std::vector<std::string> by;
    for (const kiln::Family* f : kiln::families())
      if (f->claims(grp, g)) by.emplace_back(f->name());
    REQUIRE(by.size() == 1);
    const kiln::Target target = kiln::target_of("sm_90a");
    const kiln::KernelLaunch L = kiln::specialize_group({grp, values, g, g, target});
    REQUIRE(L.family != nullptr);
    CHECK(L.family->name() == by[0]);
    out.push_back(by[0]);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "families: each registered family is named once, the core ones among them; every anchor op "
    "names a registered family") {
  std::set<std::string> names;
  for (const kiln::Family* f : kiln::families()) {
    CHECK(names.insert(std::string(f->name())).second);
    CHECK(f->headers().empty() == (f->name() == "template"));  // a user's template brings its own
    for (std::string_view h : f->headers())
      CHECK(kiln::compiler::HeaderTable::embedded().contains("kiln/" + std::string(h)));
  }
  // The families the fusion pass's own groups need (chains, row ops along either axis, views'
  // copies, users' templates); the others are asked for by name by the ops below.
  for (const char* core : {"elementwise", "rows", "columns", "view", "template"}) {
    CAPTURE(core);
    CHECK(names.count(core) == 1);
  }
  for (const auto& op : kiln::ops::all_ops()) {
    CAPTURE(op.name);
    if (op.fusion.kind == kiln::ops::FusionKind::anchor)
      CHECK(names.count(std::string(op.fusion.family)) == 1);
    else
      CHECK(op.fusion.family.empty());
  }
}

TEST_CASE("families: each group is claimed by the one family whose template computes it") {
  Graph g;
  auto x = g.input("x", {64, 48}, DType::f32);
  auto w = g.input("w", {48}, DType::f32);
  auto y = kiln::apply("silu", {x * 2.0});
  (void)w;
  g.output(kiln::apply("softmax", {y}));                 // rows: the last axis
  g.output(kiln::apply("sum", {y}, axis(0)));            // columns: a dim follows it
  g.output(kiln::apply("sum", {y}, {{"axis", "all"}}));  // rows: every element
  g.output(y + w);                                       // elementwise
  g.output(kiln::apply("matmul", {y, g.input("b", {48, 8}, DType::f32)}));  // gemm
  const std::vector<std::string> got = claimed(g);
  CHECK(std::multiset<std::string>(got.begin(), got.end()) ==
        std::multiset<std::string>{"rows", "columns", "rows", "elementwise", "gemm"});

  // A dim of 1 after the axis is no column: [64, 48, 1] along axis 1 is a row.
  Graph r;
  auto z = r.input("z", {64, 48, 1}, DType::bf16);
  r.output(kiln::apply("sum", {z}, axis(1)));
  CHECK(claimed(r) == std::vector<std::string>{"rows"});
}

TEST_CASE(
    "families: row and column kernels whose blocks would not fit in a grid are a ShapeError") {
  // Views only (no memory): what matters is the grid each family asks for.
  const auto grid = [](const char* op, kiln::Shape in, kiln::Shape out, kiln::Attrs attrs,
                       const char* arch) {
    const kiln::TensorView x = kiln::test::desc(std::move(in), DType::f32),
                           y = kiln::test::desc(std::move(out), DType::f32);
    return kiln::specialize_call(kiln::op_call(kiln::ops::find_op(op), y, {x}, attrs),
                                 kiln::target_of(arch))
        .config.grid[0];
  };
  const std::int64_t most = 0x7fffffff;  // a grid's x extent
  // One block a row.
  CHECK(grid("softmax", {most, 2}, {most, 2}, {}, "sm_90a") == unsigned(most));
  CHECK_THROWS_WITH_AS(grid("softmax", {most + 1, 2}, {most + 1, 2}, {}, "sm_90a"),
                       doctest::Contains("more than a grid holds"), kiln::ShapeError);
  // Rows of 65536 f32 split between 4 blocks where clusters run: 2^29 rows need 2^31 blocks.
  const std::int64_t rows = std::int64_t(1) << 29;
  CHECK(grid("softmax", {rows, 65536}, {rows, 65536}, {}, "sm_80") == unsigned(rows));
  CHECK_THROWS_WITH_AS(grid("softmax", {rows, 65536}, {rows, 65536}, {}, "sm_90a"),
                       doctest::Contains("4 blocks a row"), kiln::ShapeError);
  // Columns: a block per outer index and column group.
  CHECK(grid("sum", {most, 3, 4}, {most, 4}, axis(1), "sm_90a") == unsigned(most));
  CHECK_THROWS_WITH_AS(grid("sum", {most + 1, 3, 4}, {most + 1, 4}, axis(1), "sm_90a"),
                       doctest::Contains("more than a grid holds"), kiln::ShapeError);
}

TEST_CASE("families: an eager call's kernel is the one its one-node plan runs") {
  const auto& softmax = kiln::ops::find_op("softmax");
  const kiln::TensorView x = kiln::test::desc({8, 1000}, DType::bf16);
  const kiln::OpCall call = kiln::op_call(softmax, x, {x}, {});
  const kiln::KernelLaunch eager = kiln::specialize_call(call, kiln::target_of("sm_90a"));
  Graph g;
  g.output(kiln::apply("softmax", {g.input("x", {8, 1000}, DType::bf16)}));
  const std::vector<kiln::KernelSpec> planned = kiln::plan_specs(g, true, {}, nullptr, "sm_90a");
  REQUIRE(planned.size() == 1);
  CHECK(eager.spec.source == planned[0].source);
  CHECK(eager.spec.expression == planned[0].expression);
  CHECK(eager.family->name() == "rows");
  // Its slots: the output, then each tensor operand; its scalars the call's, then eps.
  const auto& clamp = kiln::ops::find_op("clamp");
  const kiln::TensorView v = kiln::test::desc({100}, DType::f32);
  const kiln::Attrs bounds{{"min", -1.0}, {"max", 2.0}};
  const kiln::KernelLaunch c =
      kiln::specialize_call(kiln::op_call(clamp, v, {v}, bounds), kiln::target_of("sm_80"));
  CHECK(c.pointers.size() == 2);
  CHECK(c.scalars == std::vector<float>{-1.f, 2.f});
}

TEST_CASE(
    "families: a plan's product group carries the GEMM family's payload (its dynamic sizes from "
    "the planned graph); the kernel is the same with it as worked out at specialization") {
  Graph g;
  auto x = g.input("x", {-1, 64}, DType::f32);  // a dynamic batch: M
  g.output(kiln::apply("linear", {x, g.input("w", {32, 64}, DType::f32)}));
  std::vector<kiln::FusedGroup> groups = kiln::fuse(g, true);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].payload == nullptr);  // fuse() alone: no family has looked at it
  kiln::analyze_groups(g, groups);
  REQUIRE(groups[0].payload != nullptr);

  Graph elementwise;
  elementwise.output(kiln::apply("exp", {elementwise.input("x", {-1, 8}, DType::f32)}));
  std::vector<kiln::FusedGroup> chain = kiln::fuse(elementwise, true);
  kiln::analyze_groups(elementwise, chain);
  CHECK(chain.at(0).payload == nullptr);  // a chain has no anchor, so no family's payload

  // Bound at M = 100, the kernel from the payload and the one worked out without it agree, and
  // both serve M's bucket (the payload said M is dynamic), not the static extent.
  const Graph b = kiln::test::bound(g, 100);
  std::vector<kiln::TensorView> values;
  for (const auto& n : b.nodes()) values.push_back(kiln::test::desc(n.shape, n.dtype));
  const kiln::Target target = kiln::target_of("sm_90a");
  kiln::FusedGroup bare = groups[0];
  bare.payload = nullptr;
  const kiln::KernelLaunch with = kiln::specialize_group({groups[0], values, b, g, target});
  const kiln::KernelLaunch without = kiln::specialize_group({bare, values, b, g, target});
  CHECK(with.spec.name == without.spec.name);
  CHECK(with.spec.expression == without.spec.expression);
  CHECK(with.bucketed);
  const kiln::KernelLaunch static_m = kiln::specialize_group({bare, values, b, b, target});
  CHECK_FALSE(static_m.bucketed);
}
