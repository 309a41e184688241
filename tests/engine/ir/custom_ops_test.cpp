// Custom elementwise ops a graph declares ("ops" in graph JSON, Graph::define_op): parsed, never
// pasted; fused into chains, prologues and epilogues like kiln's own; compiled by NVRTC without a
// GPU; on a GPU, matching the fp64 reference.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <kiln/graph.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

namespace {

// softmax(mish(x)) over x [rows, cols] of `t`, as graph JSON.
std::string mish_softmax_json(const std::string& t, const std::string& rows = "64",
                              int cols = 1000) {
  return fmt::format(R"J({{
  "ops": [{{"name": "mish", "operands": ["x"], "expr": "x * tanhf(log1pf(expf(x)))"}}],
  "inputs": [{{"name": "x", "shape": [{}, {}], "dtype": "{}"}}],
  "nodes": [
    {{"name": "m", "op": "mish", "args": ["x"]}},
    {{"name": "y", "op": "softmax", "args": ["m"]}}
  ],
  "outputs": ["y"]
}})J",
                     rows, cols, t);
}

kiln::CustomOp mish() { return {"mish", {"x"}, "x * tanhf(log1pf(expf(x)))"}; }

}  // namespace

TEST_CASE("custom ops: mish feeding a softmax plans as one kernel that NVRTC compiles") {
  const Graph g = Graph::parse(mish_softmax_json("bf16"));
  REQUIRE(g.custom_ops().size() == 1);
  const kiln::Plan plan(g);
  REQUIRE(plan.kernels("sm_90a").size() == 1);
  CHECK(plan.kernels("sm_90a")[0].ops == std::vector<std::string>{"m", "y"});
  for (const char* arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    const std::vector<kiln::KernelSpec> specs = kiln::plan_specs(g, true, {}, nullptr, arch);
    REQUIRE(specs.size() == 1);
    CHECK(specs[0].source.find("struct kiln_op_mish {") != std::string::npos);
    const kiln::CompiledKernel k = kiln::compiler::compile(specs[0], arch);
    CHECK(!k.image.empty());
  }
  // A dynamic batch binds with the graph's custom ops: the kernel of every batch of 2 or more,
  // and that of a batch of 1 (its unit dim drops out of the layout).
  const Graph d = Graph::parse(mish_softmax_json("f32", "\"?\""));
  CHECK(kiln::plan_specs(d, true, {}, nullptr, "sm_90a").size() == 2);
}

TEST_CASE("custom ops fuse into chains, prologues and epilogues, and survive JSON") {
  Graph g;
  g.define_op(mish());
  g.define_op({"blend", {"a", "b"}, "a < b ? a * 0.25 : b - a"});
  auto x = g.input("x", {32, 256}, DType::f32);
  auto w = g.input("w", {256}, DType::f32);
  auto chain = g.add("blend", {g.add("mish", {x * 2.0}), w});    // one elementwise kernel
  g.output(kiln::apply("softmax", {chain}));                     // its prologue
  g.output(g.add("mish", {kiln::apply("layer_norm", {x, w})}));  // an epilogue
  const std::vector<kiln::FusedGroup> groups = kiln::fuse(g, true);
  CHECK(groups.size() == 2);
  const std::vector<kiln::KernelSpec> specs = kiln::plan_specs(g, true, {}, nullptr, "sm_80");
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].source.find("struct kiln_op_blend {") != std::string::npos);
  const Graph back = Graph::parse(g.to_json());
  REQUIRE(back.custom_ops().size() == 2);
  CHECK(back.custom_ops()[1].expr == "a < b ? a * 0.25 : b - a");
  const std::vector<kiln::KernelSpec> again = kiln::plan_specs(back, true, {}, nullptr, "sm_80");
  REQUIRE(again.size() == 2);
  CHECK(again[0].source == specs[0].source);
  CHECK(again[1].source == specs[1].source);
  for (const auto& s : specs) CHECK(!kiln::compiler::compile(s, "sm_80").image.empty());

  // The fp64 reference evaluates the expression.
  Graph one;
  one.define_op(mish());
  one.output(one.add("mish", {one.input("x", {3}, DType::f32)}));
  kiln::test::HostInputs in;
  const float xs[3] = {-2.5f, 0.0f, 1.75f};
  in["x"].assign(reinterpret_cast<const unsigned char*>(xs),
                 reinterpret_cast<const unsigned char*>(xs) + sizeof xs);
  const std::vector<double> got = kiln::test::evaluate(one, in).at(1);
  for (int i = 0; i < 3; ++i)
    CHECK(got[std::size_t(i)] == doctest::Approx(xs[i] * std::tanh(std::log1p(std::exp(xs[i])))));
}

TEST_CASE("custom ops: a bad declaration is a GraphError naming the op, before any compile") {
  const auto refused = [](const std::string& ops, const std::string& want) {
    CAPTURE(ops);
    const std::string json = fmt::format(
        R"({{"ops": {}, "inputs": [{{"name": "x", "shape": [4], "dtype": "f32"}}],
            "nodes": [{{"name": "y", "op": "neg", "args": ["x"]}}], "outputs": ["y"]}})",
        ops);
    try {
      Graph::parse(json, "g.json");
      FAIL("parsed");
    } catch (const kiln::GraphError& e) {
      CHECK(std::string(e.what()).find(want) != std::string::npos);
      CHECK(std::string(e.what()).find("g.json") != std::string::npos);
    }
  };
  const auto op = [](const std::string& name, const std::string& expr,
                     const std::string& operands = R"(["x"])") {
    return fmt::format(R"([{{"name": {}, "operands": {}, "expr": {}}}])", name, operands, expr);
  };
  refused(op(R"("evil")", R"("x; } __global__ void k() { ")"), "'evil'");
  refused(op(R"("evil")", R"("x\n#include <cstdio>")"), "'evil'");
  refused(op(R"("evil")", R"("x /* c */")"), "'evil'");
  refused(op(R"("evil")", R"J("system(x)")J"), "'evil'");
  refused(op(R"("evil")", R"("y + 1")"), "'evil'");
  refused(op(R"("add")", R"("x")"), "kiln's own op");
  refused(op(R"("input")", R"("x")"), "kiln's own op");
  refused(op(R"("1x")", R"("x")"), "identifier");
  refused(op(R"("a b")", R"("x")"), "identifier");
  refused(op(R"("m")", R"("x")", R"(["x", "x"])"), "distinct");
  refused(op(R"("m")", R"("x")", R"(["x;"])"), "distinct");
  refused(op(R"("m")", R"("x")", R"([])"), "1 to 8 operands");
  refused(op(R"("m")", R"(3)"), "field expr");
  refused(R"([{"name": "m", "operands": ["x"], "expr": "x", "code": "x"}])", "unknown field");
  refused(R"({"name": "m"})", "ops must be an array");
  Graph g;
  g.define_op(mish());
  CHECK_THROWS_AS(g.define_op(mish()), kiln::GraphError);
  CHECK_THROWS_AS(g.add("mish", {g.input("x", {2}, DType::boolean)}), kiln::DtypeError);
}

TEST_CASE("gpu: custom ops match the fp64 reference in chains, prologues and epilogues" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(61);
  for (const char* t : {"f32", "bf16"}) {
    CAPTURE(t);
    const Graph g = Graph::parse(mish_softmax_json(t, "33", 1000));
    for (const std::string& m : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(m);
    Graph h;
    h.define_op(mish());
    h.define_op({"blend", {"a", "b"}, "a < b ? a * 0.25 : b - a"});
    const DType dt = t == std::string("f32") ? DType::f32 : DType::bf16;
    auto x = h.input("x", {7, 4099}, dt);
    auto w = h.input("w", {4099}, dt);
    h.output(h.add("blend", {h.add("mish", {x * 2.0}), w}));
    h.output(kiln::apply("softmax", {h.add("mish", {x})}));
    h.output(h.add("mish", {kiln::apply("layer_norm", {x, w})}));
    for (const std::string& m : kiln::test::check_on_gpu(e, h, rng, true)) FAIL_CHECK(m);
  }
}
