// Graphs on the CPU: building, inference errors, JSON, fusion grouping, NVRTC compile of fused
// patterns.
#include <kiln/graph.hpp>
#include <set>

#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

namespace {

Graph chain_graph(int n_ops, DType t = DType::bf16) {
  Graph g;
  auto x = g.input("x", {256, 1024}, t);
  auto b = g.input("b", {1024}, t);
  kiln::Value v = x * 2.0 + b;
  for (int i = 2; i < n_ops; ++i) v = i % 2 ? kiln::silu(v) : v * 0.5;
  g.output(v);
  return g;
}

std::string bad(const std::string& json) {
  try {
    Graph::parse(json, "g.json");
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("graph: operators build nodes with inferred shapes and dtypes") {
  Graph g;
  auto x = g.input("x", {8, 1, 5}, DType::bf16);
  auto y = g.input("y", {3, 1}, DType::f16);
  auto z = kiln::exp(x * 2.0 + y);
  g.output(z);
  CHECK(g.node(z.id()).shape == kiln::Shape{8, 3, 5});
  CHECK(g.node(z.id()).dtype == DType::f32);  // bf16 with f16 promotes
  CHECK(g.nodes().size() == 5);
  CHECK_THROWS_WITH_AS(g.add("add", {x, g.input("w", {4}, DType::f32)}, {}, "bad"),
                       doctest::Contains("node 'bad'"), kiln::ShapeError);
}

TEST_CASE("graph: Value helpers cover the elementwise catalog") {
  Graph g;
  auto x = g.input("x", {4, 8}, DType::bf16);
  auto y = g.input("y", {8}, DType::f32);
  const std::vector<std::pair<kiln::Value, std::string>> built = {
      {kiln::sin(x), "sin"},
      {kiln::cos(x), "cos"},
      {kiln::gelu_tanh(x), "gelu_tanh"},
      {kiln::pow(x, 2.0), "pow"},
      {kiln::maximum(x, y), "maximum"},
      {kiln::minimum(x, y), "minimum"},
      {kiln::eq(x, y), "eq"},
      {kiln::ne(x, y), "ne"},
      {kiln::lt(x, 0.5), "lt"},
      {kiln::le(x, y), "le"},
      {kiln::gt(x, y), "gt"},
      {kiln::ge(x, y), "ge"},
      {kiln::where(kiln::gt(x, y), x, y), "where"},
      {kiln::clamp(x, -1.0, std::nullopt), "clamp"},
      {kiln::cast(y, DType::f16), "cast"}};
  for (const auto& [v, op] : built) {
    CAPTURE(op);
    CHECK(g.node(v.id()).op == op);
  }
  CHECK(g.node(built[6].first.id()).dtype == DType::boolean);
  CHECK(g.node(built[12].first.id()).shape == kiln::Shape{4, 8});
  CHECK(g.node(built[14].first.id()).dtype == DType::f16);
  CHECK(g.node(built[13].first.id()).attrs.number("min") == -1.0);
}

TEST_CASE("graph: JSON round trip") {
  const Graph g = chain_graph(6);
  const Graph back = Graph::parse(g.to_json());
  CHECK(back.to_json() == g.to_json());
  CHECK(back.nodes().size() == g.nodes().size());
  Graph d;
  d.input("x", {-1, 16}, DType::f32);
  d.output(kiln::relu(kiln::Value(&d, 0)));
  CHECK(d.to_json().find("[\"?\", 16]") != std::string::npos);
  CHECK(Graph::parse(d.to_json()).node(0).shape == kiln::Shape{-1, 16});
}

TEST_CASE("graph: malformed files are GraphErrors naming the node and field") {
  const std::string in = R"("inputs": [{"name": "x", "shape": [4, 8], "dtype": "f32"}])";
  CHECK(bad("{").find("not valid JSON") != std::string::npos);
  CHECK(bad("{" + in +
            R"(, "nodes": [{"name": "y", "op": "frob", "args": ["x"]}], "outputs": ["y"]})")
            .find("node 'y': field op: unknown op 'frob'") != std::string::npos);
  CHECK(bad("{" + in +
            R"(, "nodes": [{"name": "y", "op": "add", "args": ["x", "q"]}], "outputs": ["y"]})")
            .find("node 'y': field args[1]: 'q' is not an input or an earlier node") !=
        std::string::npos);
  CHECK(
      bad("{" + in + R"(, "nodes": [{"name": "y", "op": "add", "args": ["x"]}], "outputs": ["y"]})")
          .find("takes 2 operand(s)") != std::string::npos);
  CHECK(
      bad("{" + in + R"(, "nodes": [{"name": "x", "op": "neg", "args": ["x"]}], "outputs": ["x"]})")
          .find("node 'x': the name is already used") != std::string::npos);
  CHECK(
      bad(R"({"inputs": [{"name": "x", "shape": [4], "dtype": "f64"}], "nodes": [], "outputs": ["x"]})")
          .find("input 'x'") != std::string::npos);
  CHECK(
      bad(R"({"inputs": [{"name": "x", "shape": [-4], "dtype": "f32"}], "nodes": [], "outputs": ["x"]})")
          .find("field shape") != std::string::npos);
  CHECK(bad("{" + in + R"(, "nodes": [{"name": "y", "op": "neg"}], "outputs": ["y"]})")
            .find("node 'y': missing field 'args'") != std::string::npos);
  CHECK(bad("{" + in + R"(, "nodes": [], "outputs": ["nope"]})").find("field outputs") !=
        std::string::npos);
  CHECK(
      bad("{" + in +
          R"(, "nodes": [{"name": "y", "op": "clamp", "args": ["x"], "attrs": {"mn": 1}}], "outputs": ["y"]})")
          .find("attrs.mn") != std::string::npos);
  CHECK(
      bad("{" + in +
          R"(, "nodes": [{"name": "y", "op": "add", "args": ["x", "x"]}], "outputs": ["y"], "extra": 1})")
          .find("unknown top-level field 'extra'") != std::string::npos);
  CHECK(bad("[]").find("top level") != std::string::npos);
  CHECK_THROWS_AS(Graph::load("/nonexistent/g.json"), kiln::GraphError);
}

TEST_CASE("graph: names are checked, printed escaped, and never reach a kernel's source or key") {
  Graph g;
  auto x = g.input("x", {64}, DType::f32);
  for (const std::string& name : {std::string("y\n#error boom"), std::string(""),
                                  std::string(300, 'n'), std::string("a\x1b[31m")}) {
    CAPTURE(kiln::printable_name(name));
    try {
      g.add("neg", {x}, {}, name.empty() ? std::string(1, '\t') : name);
      FAIL("accepted");
    } catch (const kiln::GraphError& e) {
      const std::string what = e.what();
      CHECK(what.rfind("node '", 0) == 0);
      CHECK(what.find('\n') == std::string::npos);
      CHECK(what.find('\x1b') == std::string::npos);
    }
    CHECK_THROWS_AS(g.input(name, {4}, DType::f32), kiln::GraphError);
  }
  CHECK(kiln::printable_name("y\n#e\x01'") == "y\\n#e\\x01\\'");
  CHECK(kiln::printable_name(std::string(100, 'a')) == std::string(80, 'a') + "...");

  // The same computation under other names, outputs named by the builder or not, and automatic
  // names shifted by an unrelated node built first: one kernel source, one cache key.
  auto specs_of = [](bool decoy, const std::string& out_name, const std::string& mid_name) {
    Graph h;
    if (decoy) h.output(kiln::exp(h.input("unrelated", {3}, DType::f16)));
    auto a = h.input(decoy ? "a2" : "a", {128}, DType::bf16);
    auto b = h.input("b", {128}, DType::bf16);
    h.output(kiln::silu(h.add("mul", {a, b}, {}, mid_name)), out_name);
    return kiln::plan_specs(h);
  };
  const auto base = specs_of(false, "y", "");
  for (const auto& other :
       {specs_of(false, "out", ""), specs_of(true, "", "t"), specs_of(true, "z", "renamed")}) {
    const auto& k = other.back();
    CHECK(k.source == base.back().source);
    CHECK(k.expression == base.back().expression);
    CHECK(k.name == base.back().name);
  }
  // Outputs take the builder's name; a taken or bad one is refused.
  Graph n;
  auto in = n.input("in", {4}, DType::f32);
  auto v = kiln::exp(in);
  n.output(v, "y");
  CHECK(n.node(v.id()).name == "y");
  CHECK(n.find("y") == v.id());
  CHECK_THROWS_AS(n.output(kiln::neg(in), "in"), kiln::GraphError);
  CHECK_THROWS_AS(n.output(kiln::neg(in), "bad\nname"), kiln::GraphError);
}

TEST_CASE("fusion: each kernel is labelled with what it computes, as NVTX shows it") {
  Graph g;
  auto x = g.input("x", {64, 256}, DType::bf16);
  auto b = g.input("b", {256}, DType::bf16);
  auto c = g.input("c", {256}, DType::bf16);
  g.output(kiln::softmax(x * 2.0 + b), "y");
  g.output(x - (b + c), "z");
  auto groups = kiln::fuse(g, true);
  REQUIRE(groups.size() == 2);
  std::set<std::string> labels;
  for (const auto& grp : groups) labels.insert(kiln::describe_group(g, grp));
  CHECK(labels == std::set<std::string>{"softmax(mul(x,2)+b)", "x-(b+c)"});
  // A value used twice at every step: rendered once per node (no blow-up), cut at 200 bytes.
  Graph d;
  kiln::Value t = d.input("x", {8}, DType::f32);
  for (int i = 0; i < 60; ++i) t = t + t;
  d.output(t);
  const std::string long_label = kiln::describe_group(d, kiln::fuse(d, true).front());
  CHECK(long_label.size() == 200);
  CHECK(long_label.substr(197) == "...");
}

TEST_CASE("fusion: a chain of elementwise ops is one kernel; unfused it is one per op") {
  const Graph g = chain_graph(8);
  const auto fused = kiln::Plan(g, true).kernels();
  REQUIRE(fused.size() == 1);
  CHECK(fused[0].ops.size() == 8);
  CHECK(fused[0].name.find("mul_add_mul_5_more_bf16__r2v8") == 0);
  CHECK(kiln::Plan(g, false).kernels().size() == 8);
}

TEST_CASE(
    "fusion: outputs of two shapes make two kernels; shared values are recomputed, not stored") {
  Graph g;
  auto x = g.input("x", {64, 128}, DType::f32);
  auto b = g.input("b", {128}, DType::f32);
  auto bb = kiln::exp(b);  // [128], consumed by the [64, 128] kernel too
  g.output(x * bb);
  g.output(bb);
  const auto k = kiln::Plan(g, true).kernels();
  REQUIRE(k.size() == 2);
  CHECK(k[0].ops == std::vector<std::string>{"t2"});
  CHECK(k[1].ops == std::vector<std::string>{"t2", "t3"});
  CHECK_THROWS_WITH_AS(([&] {
                         Graph h;
                         h.output(h.input("x", {4}, DType::f32));
                         kiln::Plan p(h);
                       }()),
                       doctest::Contains("is an input of the graph"), kiln::GraphError);
}

TEST_CASE(
    "Plan::kernels: a malformed arch is an ArgumentError; a dynamic input no kernel reads leaves "
    "its grids static") {
  Graph g;
  g.output(kiln::exp(g.input("x", {4, 64}, DType::f32)));
  g.input("unused", {-1, 3}, DType::f32);
  const kiln::Plan p(g);
  for (const char* arch : {"garbage", "", "sm_", "90a"})
    CHECK_THROWS_WITH_AS(p.kernels(arch), doctest::Contains("bad arch"), kiln::ArgumentError);
  const auto k = p.kernels("sm_80");
  REQUIRE(k.size() == 1);
  CHECK(k[0].grid >= 1);
  CHECK(k[0].block >= 1);
  Graph d;  // a dynamic batch that the kernel reads: its grid is the launch's
  d.output(kiln::exp(d.input("x", {-1, 64}, DType::f32)));
  CHECK(kiln::Plan(d).kernels("sm_80").at(0).grid == 0);
}

TEST_CASE("fused patterns NVRTC-compile for sm_80 and sm_90a") {
  std::vector<Graph> graphs;
  for (DType t : kiln::kFloatDTypes) graphs.push_back(chain_graph(10, t));
  {
    Graph g;  // softplus(x*s + mask) with a cast in the middle and two outputs of one shape
    auto x = g.input("x", {512, 256}, DType::bf16);
    auto m = g.input("mask", {256}, DType::f32);
    auto c = kiln::apply("cast", {x * 0.125 + m}, {{"dtype", "bf16"}});
    g.output(kiln::softplus(c));
    g.output(kiln::apply("where", {kiln::apply("gt", {c, 0.0}), c,
                                   kiln::apply("clamp", {x}, {{"min", -1.0}, {"max", 1.0}})}));
    graphs.push_back(g);
  }
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    for (const Graph& g : graphs) {
      const auto recs = kiln::Plan(g).compile(e);
      REQUIRE(recs.size() == 1);
      CHECK(recs[0].source == "compiled");
    }
  }
}

TEST_CASE("plan: outputs() binds dynamic dims from the inputs and checks them, with no GPU") {
  Graph g;
  auto x = g.input("x", {-1, 16}, DType::bf16);
  auto b = g.input("b", {16}, DType::f32);
  g.output(kiln::reduce("sum", kiln::cast(x, DType::f32) + b, false, 1), "total");
  g.output(kiln::relu(x), "r");
  const kiln::Plan plan(g);
  kiln::TensorView xv{0, {37, 16}, {}, DType::bf16}, bv{0, {16}, {}, DType::f32};
  const auto out = plan.outputs({{"x", xv}, {"b", bv}});
  REQUIRE(out.size() == 2);
  CHECK(out.at("total").shape == kiln::Shape{37});
  CHECK(out.at("total").dtype == DType::f32);
  CHECK(out.at("r").shape == kiln::Shape{37, 16});
  CHECK(out.at("r").dtype == DType::bf16);
  CHECK(out.at("r").data == 0);
  CHECK(plan.graph().node(0).name == "x");
  xv.shape = {37, 15};
  CHECK_THROWS_WITH_AS(plan.outputs({{"x", xv}, {"b", bv}}), doctest::Contains("input 'x'"),
                       kiln::ShapeError);
  CHECK_THROWS_WITH_AS(plan.outputs({{"b", bv}}), doctest::Contains("'x'"), kiln::GraphError);
}
