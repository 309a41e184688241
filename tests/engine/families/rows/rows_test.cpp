// Row ops on the CPU: shape rules, fusion around them, NVRTC compile of every row op pattern.
#include <fmt/format.h>

#include <kiln/graph.hpp>

#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/exec/precompile.hpp"
#include "engine/families/rows/row_templates.hpp"
#include "ops/op.hpp"
#include "tests/engine/cases.hpp"
#include "tests/support.hpp"

using kiln::test::desc;

using kiln::DType;
using kiln::Graph;

TEST_CASE("row ops: shapes, keepdim, and errors naming the operands") {
  const kiln::Attrs keep{{"keepdim", true}};
  CHECK(kiln::infer("sum", {desc({4, 5, 6}, DType::bf16)}).shape == kiln::Shape{4, 5});
  CHECK(kiln::infer("max", {desc({4, 5, 6}, DType::bf16)}, keep).shape == kiln::Shape{4, 5, 1});
  CHECK(kiln::infer("softmax", {desc({4, 6}, DType::f16)}).shape == kiln::Shape{4, 6});
  CHECK(kiln::infer("layer_norm", {desc({4, 6}, DType::f32), desc({6}, DType::bf16)}).dtype ==
        DType::f32);
  kiln::Attrs axis0{{"axis", 0}}, all{{"axis", "all"}}, all_keep = all, axis3{{"axis", 3}};
  all_keep.set("keepdim", true);
  CHECK(kiln::infer("softmax", {desc({4, 6}, DType::f32)}, axis0).shape == kiln::Shape{4, 6});
  CHECK(kiln::infer("sum", {desc({4, 5, 6}, DType::f32)}, axis0).shape == kiln::Shape{5, 6});
  axis0.set("keepdim", true);
  CHECK(kiln::infer("mean", {desc({4, 5, 6}, DType::f32)}, axis0).shape == kiln::Shape{1, 5, 6});
  CHECK(kiln::infer("max", {desc({4, 5, 6}, DType::f32)}, all).shape == kiln::Shape{});
  CHECK(kiln::infer("min", {desc({4, 5, 6}, DType::f32)}, all_keep).shape == kiln::Shape{1, 1, 1});
  CHECK_THROWS_WITH_AS(kiln::infer("sum", {desc({4, 6}, DType::f32)}, axis3),
                       doctest::Contains("axis 3 is out of range for rank 2"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(kiln::infer("softmax", {desc({4, 6}, DType::f32)}, all),
                       "softmax: attribute axis=\"all\" is not an integer", kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("layer_norm", {desc({4, 6}, DType::f32)}, axis0),
                       doctest::Contains("along the last axis"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(kiln::infer("layer_norm", {desc({4, 6}, DType::f32), desc({5}, DType::f32)}),
                       doctest::Contains("weight must be a tensor of shape [6]"), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("sum", {desc({}, DType::f32)}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("sum", {desc({3, 0}, DType::f32)}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("softmax", {desc({3}, DType::boolean)}), kiln::DtypeError);
  CHECK_THROWS_WITH_AS(kiln::infer("rms_norm", {desc({3}, DType::f32), desc({3}, DType::f32),
                                                desc({3}, DType::f32), 1.0}),
                       doctest::Contains("takes 1 to 3 operand(s)"), kiln::ArgumentError);
}

TEST_CASE("fusion: elementwise producers fuse into a row op as its prologue") {
  Graph g;
  auto x = g.input("x", {128, 4096}, DType::bf16);
  auto mask = g.input("mask", {4096}, DType::bf16);
  auto p = kiln::softmax(kiln::silu(x * 0.125 + mask));
  g.output(p);
  const auto k = kiln::Plan(g).kernels();
  REQUIRE(k.size() == 1);
  CHECK(k[0].name == "mul_add_silu__softmax_bf16__r2v8");
  CHECK(k[0].ops == std::vector<std::string>{"t2", "t3", "t4", "t5"});
  CHECK(k[0].grid == 128);
  CHECK(kiln::Plan(g, false).kernels().size() == 4);
}

TEST_CASE("fusion: 6 elementwise ops -> softmax -> 3 elementwise ops is exactly one kernel") {
  Graph g;
  auto x = g.input("x", {256, 4096}, DType::bf16);
  auto mask = g.input("mask", {4096}, DType::bf16);
  auto g1 = g.input("gain", {4096}, DType::f32);
  kiln::Value v =
      kiln::tanh(kiln::silu(x * 0.125 + mask) - 1.0) * 3.0;  // mul add silu sub tanh mul
  auto p = kiln::softmax(kiln::apply("clamp", {v}, {{"min", -5.0}, {"max", 5.0}}));  // 7th: clamp
  g.output(kiln::relu(p * g1 + x));                                              // mul add relu
  const auto k = kiln::Plan(g).kernels();
  REQUIRE(k.size() == 1);
  CHECK(k[0].ops.size() == 11);
  CHECK(k[0].name ==
        "mul_add_silu_4_more__softmax__mul_add_relu_bf16__r2v4");  // f32 gain: 16-byte packs of 4
  // Also a graph output: the softmax result is written by the same kernel.
  g.output(p);
  const auto both = kiln::Plan(g).kernels();
  REQUIRE(both.size() == 1);
}

TEST_CASE("fusion: a row result feeding more ops is materialized and read by the next kernel") {
  Graph g;
  auto x = g.input("x", {64, 256}, DType::f32);
  auto s = kiln::reduce("sum", x, true);  // [64, 1]
  g.output(x - s * (1.0 / 256));          // a consumer of another shape: its own kernel
  g.output(kiln::reduce("max", kiln::softmax(x)));
  const auto k = kiln::Plan(g).kernels();
  REQUIRE(k.size() == 4);
  CHECK(k[0].name.rfind("sum_f32", 0) == 0);
  CHECK(k[1].name.rfind("softmax_f32", 0) == 0);
  CHECK(k[2].name.rfind("mul_sub_f32", 0) == 0);  // depth 1: after the row ops it reads
  CHECK(k[3].name.rfind("max_f32", 0) == 0);      // depth 2
}

TEST_CASE("every row op x dtype x pattern NVRTC-compiles for sm_80 and sm_90a") {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    std::size_t graphs = 0;
    for (DType t : kiln::kFloatDTypes)
      for (const Graph& g : kiln::test::row_graphs(t, 96, 1000)) {
        CAPTURE(g.to_json());
        const auto records = kiln::Plan(g).compile(e);
        CHECK(records.size() == 1);  // prologue, row op and epilogue in one kernel
        for (const auto& r : records) CHECK((r.source == "compiled" || r.source == "memory"));
        ++graphs;
      }
    CHECK(graphs == 3 * (10 * 3 + 4));
    CHECK(e.counters().compiles >= 3 * 10 * 2);  // keepdim adds kernels for reductions only
  }
}

TEST_CASE(
    "row ops along any axis: the column template, all-element reductions; they and the streaming "
    "row template NVRTC-compile for sm_80 and sm_90a") {
  Graph g;
  auto x = g.input("x", {32768, 4096}, DType::f32);
  g.output(kiln::reduce("sum", x, false, 0));
  g.output(kiln::reduce_all("max", kiln::exp(x)));
  g.output(kiln::apply("softmax", {x * 2.0}, {{"axis", 0}}));
  const auto k = kiln::Plan(g).kernels();
  REQUIRE(k.size() == 3);
  CHECK(k[0].name == "sum_f32__col2v4");
  CHECK(k[0].grid * k[0].block / 4 >= 4096);  // every column group has its threads
  CHECK(k[1].name.rfind("exp__max_f32__all", 0) == 0);
  CHECK(k[1].grid == 8);                                  // one cluster of 8 blocks (sm_90a) ...
  CHECK(kiln::Plan(g).kernels("sm_80").at(1).grid == 1);  // ... one block before
  CHECK(k[2].name == "mul__softmax_f32__col2v4");  // the axis is never merged with the columns
  {  // ... else the vector width would take values of two rows: [7, 300, 5] is one dim of 10500
    Graph h;
    auto y = h.input("y", {7, 300, 5}, DType::f32);
    h.output(kiln::apply("softmax", {y * 2.0}, {{"axis", 1}}));
    CHECK(kiln::Plan(h).kernels().at(0).name == "mul__softmax_f32__col3v1");
  }
  // Round trip of "axis": "all" through the JSON format.
  CHECK(Graph::parse(g.to_json(), "g").to_json() == g.to_json());
  CHECK(g.to_json().find(R"("axis":"all")") != std::string::npos);
  // Every graph is one kernel; all of them compiled at once (on every core).
  std::vector<kiln::KernelSpec> specs;
  for (DType t : kiln::kFloatDTypes)
    for (const kiln::Shape& s : {kiln::Shape{6, 5, 100}, kiln::Shape{4096, 7}})
      for (const Graph& a : kiln::test::axis_graphs(t, s)) {
        const auto one = kiln::plan_specs(a);
        CHECK(one.size() == 1);
        specs.insert(specs.end(), one.begin(), one.end());
      }
  CHECK(specs.size() == 3 * ((6 * 4 + 2 * 2) + (6 * 3 + 2 * 1)));
  // Rows of 65536: on sm_80 the streaming row template (with its stash); on sm_90a ops that
  // write the row split it between the blocks of a cluster (bf16 groups of 8: 8 blocks of 256
  // threads x 32 values in registers; groups of 4, with an f32 operand: 4 blocks each
  // streaming 64 KiB of it), and reductions stream. Every spec compiles for both archs (a
  // split one into a trap for sm_80).
  int split = 0;
  for (const Graph& a : kiln::test::row_graphs(DType::bf16, 2, 65536)) {
    CAPTURE(a.to_json());
    const auto old = kiln::plan_specs(a, true, {}, nullptr, "sm_80"),
               hopper = kiln::plan_specs(a, true, {}, nullptr, "sm_90a");
    CHECK(old.at(0).expression.find("kiln::rows<") == 0);
    CHECK(old.at(0).expression.find(", 1024, 0>") != std::string::npos);
    const bool splits = hopper.at(0).expression.find("kiln::rows_split<") == 0;
    split += splits;
    const std::string& h = hopper.at(0).expression;
    CHECK((splits ? h.find(", 8, unsigned int, 256, 4, 8>") != std::string::npos ||
                        h.find(", 4, unsigned int, 512, 0, 4>") != std::string::npos
                  : h == old.at(0).expression));
    specs.insert(specs.end(), old.begin(), old.end());
    if (splits) specs.insert(specs.end(), hopper.begin(), hopper.end());
  }
  CHECK(split >= 4);
  kiln::cache::KernelCache cache(std::nullopt);
  kiln::PrecompileOptions po;
  po.archs = {"sm_80", "sm_90a"};
  const kiln::PrecompileSummary sum = kiln::precompile_specs(specs, po, cache);
  for (const auto& f : sum.failures) FAIL_CHECK(f.name << " " << f.arch << ": " << f.error);
  CHECK(sum.compiled + sum.cached == int(2 * specs.size()));
}

TEST_CASE("the row templates' tunables: the parse and both spaces are the table's rows") {
  CHECK_THROWS_WITH_AS(kiln::row_tunables({{"unroll", 2}}, "softmax_f32"),
                       "softmax_f32: 'unroll' is not a tunable of the row templates (block, items, "
                       "cols, split, pack, grouped)",
                       kiln::ArgumentError);
  const auto names = [](const kiln::autotune::Space& s) {
    std::vector<std::string> out;
    for (const auto& t : s.tunables) out.push_back(t.name);
    return out;
  };
  CHECK(names(kiln::autotune::rows_space(100, 4, {}, false)) ==
        std::vector<std::string>{"block", "items", "pack"});
  CHECK(names(kiln::autotune::rows_space(100, 4, {}, true)) ==
        std::vector<std::string>{"block", "items", "split", "pack"});
  CHECK(names(kiln::autotune::columns_space({})) == std::vector<std::string>{"block", "cols"});
  for (const auto& row : kiln::row_tunable_table()) {
    CAPTURE(std::string(row.name));
    for (int v : row.values)
      CHECK(kiln::row_tunables({{std::string(row.name), v}}, "x").*(row.field) == v);
  }
}

TEST_CASE("a row kernel's epilogue takes fast math where its outputs are all 16-bit") {
  // layer_norm -> silu and group_norm -> silu: f16 and bf16 outputs round far above __expf's
  // error; f32 ones keep expf.
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    Graph g;
    const auto x = g.input("x", {64, 4096}, t);
    g.output(kiln::apply("silu", {kiln::apply("layer_norm", {x})}), "y");
    Graph gn;
    const auto xs = gn.input("x", {2, 64, 8, 8}, t);
    gn.output(kiln::apply("silu", {kiln::apply("group_norm", {xs}, {{"groups", 8}})}), "y");
    for (const Graph* graph : {&g, &gn}) {
      const std::vector<kiln::KernelSpec> specs = kiln::plan_specs(*graph, true, {}, nullptr,
                                                                   "sm_90a");
      REQUIRE(specs.size() == 1);
      CAPTURE(kiln::name_of(t));
      CAPTURE(specs[0].name);
      CHECK((specs[0].source.find("kiln::op::fast::Silu") != std::string::npos) ==
            (t != DType::f32));
      CHECK((specs[0].source.find("kiln::op::Silu") != std::string::npos) == (t == DType::f32));
    }
  }
}
