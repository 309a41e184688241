// concat: its shape and dtype rules; the plans it makes (one kernel per operand writing its
// window, elementwise producers computed there, nothing else copied); the arena's life of its
// result; and on the GPU, 1 to 9 operands of mixed producers along every axis against fp64.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/passes/fusion.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/planner.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

std::string infer_error(std::vector<kiln::Operand> args, Attrs attrs = {}) {
  try {
    kiln::infer("concat", args, attrs);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> kernel_names(const Graph& g, bool fuse = true) {
  std::vector<std::string> out;
  for (const auto& k : kiln::Plan(g, fuse).kernels()) out.push_back(k.name);
  return out;
}

// Operand `i` of a concat along `axis` of [2, 3, 5]-like shapes (extent `e` along the axis),
// made by producer `kind`, one of six: a graph input, an elementwise chain of inputs, a row op's
// result, a product's, a view (a permuted input) or an elementwise chain of a row op's result.
kiln::Value operand(Graph& g, int i, int kind, std::size_t axis, std::int64_t e, DType t) {
  Shape s = {2, 3, 5};
  s[axis] = e;
  const std::string name = fmt::format("x{}", i);
  switch (kind) {
    case 0:
      return g.input(name, s, t);
    case 1:
      return kiln::silu(g.input(name, s, t) * 0.5 + 1.0);
    case 2:
      return kiln::softmax(g.input(name, s, t));
    case 3: {
      Shape a = s, b = {s[2], s[2]};
      return kiln::matmul(g.input(name, a, t), g.input(name + "w", b, t));
    }
    case 4:
      return kiln::apply("permute", {g.input(name, {s[2], s[0], s[1]}, t)},
                         Attrs().set("dims", std::vector<std::int64_t>{1, 2, 0}));
    default:
      return kiln::exp(kiln::reduce("max", g.input(name, s, t), true) - 1.0) +
             g.input(name + "b", s, t);
  }
}

}  // namespace

TEST_CASE("concat: shapes, dtypes, axes, and errors naming the call") {
  const auto a = desc({2, 3, 5}, DType::bf16), b = desc({2, 4, 5}, DType::bf16);
  CHECK(kiln::infer("concat", {a, b}, Attrs().set("axis", 1)).shape == Shape{2, 7, 5});
  CHECK(kiln::infer("concat", {a, b, a}, Attrs().set("axis", -2)).shape == Shape{2, 10, 5});
  CHECK(kiln::infer("concat", {a}).shape == Shape{2, 3, 5});
  CHECK(kiln::infer("concat", {a, a}).shape == Shape{4, 3, 5});  // axis 0 by default
  CHECK(infer_error({a, b}).find("xs[1]'s dim 1 (4) differs from xs[0]'s (3)") !=
        std::string::npos);
  CHECK(infer_error({a, desc({2, 3, 5}, DType::f16)}, Attrs().set("axis", 1))
            .find("xs[1] is f16, xs[0] bf16") != std::string::npos);
  CHECK(infer_error({a, desc({2, 3}, DType::bf16)}).find("xs[1] has rank 2") != std::string::npos);
  CHECK(infer_error({a, b}, Attrs().set("axis", 3)).find("axis 3 is out of range") !=
        std::string::npos);
  CHECK(infer_error({a, 1.0}).find("every operand must be a tensor") != std::string::npos);
  CHECK(infer_error({}).find("concat takes 1 or more operands") != std::string::npos);
  CHECK(infer_error({desc({}, DType::f32)}).find("out of range for rank 0") != std::string::npos);
  kiln::Engine e(kiln::test::offline("sm_90a"));
  CHECK_THROWS_WITH_AS(kiln::precompile(e, "concat", {a, b}, Attrs().set("axis", 1)),
                       doctest::Contains("runs in a plan"), kiln::ArgumentError);
}

TEST_CASE("concat: a dynamic batch is carried along; a dynamic axis is refused") {
  Graph g;
  const auto x = g.input("x", {-1, 8}, DType::f32), y = g.input("y", {-1, 4}, DType::f32);
  const auto c = kiln::concat({x, kiln::exp(y)}, 1);
  CHECK(g.node(c.id()).shape == Shape{-1, 12});
  g.output(kiln::apply("layer_norm", {c}), "out");
  CHECK(kiln::Plan(g).kernels().size() == 3);
  CHECK_THROWS_WITH_AS(kiln::concat({x, x}, 0), doctest::Contains("xs[0] is dynamic along axis 0"),
                       kiln::ShapeError);
}

TEST_CASE("stack: a new dim of 1 on each, then a concat along it") {
  Graph g;
  const auto x = g.input("x", {2, 3}, DType::f32), y = g.input("y", {2, 3}, DType::f32);
  const auto node = [&](kiln::Value v) { return g.node(v.id()); };
  CHECK(node(kiln::stack({x, y})).shape == Shape{2, 2, 3});
  CHECK(node(kiln::stack({x, y, x}, -1)).shape == Shape{2, 3, 3});
  CHECK(node(kiln::stack({x}, 1)).shape == Shape{2, 1, 3});
  CHECK(node(kiln::stack({x, kiln::exp(y)}, 1)).op == "concat");
  CHECK_THROWS_WITH_AS(kiln::stack({x}, 3), doctest::Contains("axis 3 is out of range"),
                       kiln::ShapeError);
  CHECK_THROWS_AS(kiln::stack({}), kiln::GraphError);
}

TEST_CASE("concat: each operand's kernel writes its window; elementwise producers compute it") {
  Graph g;
  const auto x = g.input("x", {2, 3, 8}, DType::f16), y = g.input("y", {2, 5, 8}, DType::f16);
  const auto c = kiln::concat({kiln::silu(x), y * 2.0 + 1.0}, 1);
  g.output(kiln::apply("layer_norm", {c}), "out");
  const auto names = kernel_names(g);
  REQUIRE(names.size() == 3);  // no copy: each chain computed into its window, then the norm
  CHECK(names[0].rfind("silu__concat_f16", 0) == 0);
  CHECK(names[1].rfind("mul_add__concat_f16", 0) == 0);
  CHECK(names[2].rfind("layer_norm_f16", 0) == 0);
  CHECK(kernel_names(g, false).size() == 6);  // unfused: silu, mul, add, two copies, the norm
  // A graph input, a row op's result and a value also read elsewhere are copied (one pass),
  // adjacent operands of one shape by one kernel (at most 4), the others by one each.
  Graph h;
  const auto a = h.input("a", {4, 8}, DType::f32), b = h.input("b", {4, 8}, DType::f32);
  const auto sb = kiln::exp(b);
  h.output(sb, "sb");
  h.output(kiln::concat({a, kiln::softmax(a), sb, a, a, h.input("n", {4, 2}, DType::f32), a}, -1),
           "c");
  const auto hn = kernel_names(h);
  REQUIRE(hn.size() == 6);  // exp, softmax, then parts {a, softmax, sb, a}, {a}, {n}, {a}
  for (std::size_t i = 2; i < hn.size(); ++i) CHECK(hn[i].rfind("concat_f32", 0) == 0);
  const std::vector<kiln::FusedGroup> groups = kiln::fuse(h, true);
  std::vector<std::pair<int, int>> parts;
  for (const kiln::FusedGroup& grp : groups)
    if (grp.part >= 0) parts.emplace_back(grp.part, grp.parts);
  CHECK(parts == std::vector<std::pair<int, int>>{{0, 4}, {4, 1}, {5, 1}, {6, 1}});
  for (const kiln::FusedGroup& grp : groups)
    if (grp.part == 0) CHECK(grp.pointer_nodes().size() == 4 + grp.inputs.size());
}

TEST_CASE("concat: the U-Net skip concat of two produced channels_last halves has no copy") {
  // [2, 640, 32, 32] + [2, 640, 32, 32] -> [2, 1280, 32, 32] f16, each input channels_last (an
  // NHWC tensor permuted to NCHW), a SiLU of one and a scale of the other: one kernel computing
  // each half into its window of the result.
  Graph g;
  const auto nhwc = [&](const char* name) {
    return kiln::apply("permute", {g.input(name, {2, 32, 32, 640}, DType::f16)},
                       Attrs().set("dims", std::vector<std::int64_t>{0, 3, 1, 2}));
  };
  g.output(kiln::concat({kiln::silu(nhwc("h")), nhwc("skip") * 0.5}, 1), "c");
  const auto names = kernel_names(g);
  REQUIRE(names.size() == 1);
  CHECK(names[0].rfind("silu_mul__concat_f16", 0) == 0);
  const std::vector<kiln::FusedGroup> one = kiln::fuse(g, true);
  REQUIRE(one.size() == 1);
  CHECK(one[0].parts == 2);
  CHECK(one[0].body.outputs.size() == 2);
  // Halves of different extents: the second's kernel follows the first's and may run beside it
  // (LaunchConfig::beside), both of the template's variant that lets the next start early and
  // ends after the previous.
  Graph u;
  const auto half = [&](const char* name, std::int64_t c) {
    return kiln::apply("permute", {u.input(name, {2, 32, 32, c}, DType::f16)},
                       Attrs().set("dims", std::vector<std::int64_t>{0, 3, 1, 2}));
  };
  u.output(kiln::concat({kiln::silu(half("h", 640)), half("skip", 320) * 0.5}, 1), "c");
  const std::vector<kiln::FusedGroup> groups = kiln::fuse(u, true);
  REQUIRE(groups.size() == 2);
  CHECK(!groups[0].beside_previous);
  CHECK(groups[1].beside_previous);
  for (const auto& spec : kiln::plan_specs(u))
    CHECK(spec.expression.find(", true>") != std::string::npos);
  // Parts of two concats, or a part after another kernel, are not beside their predecessor.
  Graph h;
  const auto a = h.input("a", {4, 8}, DType::f32), b = h.input("b", {2, 8}, DType::f32);
  h.output(kiln::concat({kiln::exp(a), b}, 0), "c");
  h.output(kiln::concat({kiln::exp(b), a}, 0), "d");
  const std::vector<kiln::FusedGroup> hg = kiln::fuse(h, true);
  REQUIRE(hg.size() == 4);
  CHECK(std::vector<bool>{hg[0].beside_previous, hg[1].beside_previous, hg[2].beside_previous,
                          hg[3].beside_previous} == std::vector<bool>{false, true, false, true});
}

TEST_CASE("concat: its result lives in the arena from its first part's kernel to its reader") {
  Graph g;
  const auto x = g.input("x", {64, 64}, DType::f32);
  const auto c = kiln::concat({kiln::exp(x), kiln::softmax(x), kiln::relu(x)}, 0);
  g.output(kiln::reduce("sum", c), "s");
  const auto groups = kiln::fuse(g, true);
  const kiln::ArenaPlan p = kiln::plan_arena(g, groups);
  const int id = c.id();
  int first = -1, last = -1, reader = -1;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (groups[k].part >= 0) first = first < 0 ? int(k) : first, last = int(k);
    for (int in : groups[k].inputs)
      if (in == id) reader = int(k);
  }
  REQUIRE(first >= 0);
  CHECK(p.first[std::size_t(id)] == first);
  CHECK(p.last[std::size_t(id)] == reader);
  CHECK(last < reader);
  // The softmax's result, read by a part between the first and the last, never shares its bytes.
  for (std::size_t v = 0; v < p.offset.size(); ++v)
    if (p.offset[v] >= 0 && int(v) != id && p.first[v] <= p.last[std::size_t(id)] &&
        p.first[std::size_t(id)] <= p.last[v])
      CHECK((p.offset[v] + p.size[v] <= p.offset[std::size_t(id)] ||
             p.offset[std::size_t(id)] + p.size[std::size_t(id)] <= p.offset[v]));
}

namespace {

// 1 to 9 operands of mixed producers along each axis (extents 1 to 4), in each dtype; the
// concat read by a row op, by a product, and as an output.
std::vector<Graph> concat_graphs() {
  std::vector<Graph> out;
  int n = 0;
  for (DType t : kiln::kFloatDTypes)
    for (std::size_t axis = 0; axis < 3; ++axis)
      for (int k : {1, 2, 3, 6, 9}) {
        Graph g;
        std::vector<kiln::Value> xs;
        for (int i = 0; i < k; ++i)
          xs.push_back(operand(g, i, (i + n) % 6, axis, 1 + (i * 7 + n) % 4, t));
        ++n;
        const auto c = kiln::concat(xs, axis == 2 ? -1 : std::int64_t(axis));
        g.output(c * 1.0, "c");
        g.output(kiln::softmax(c), "s");
        out.push_back(std::move(g));
      }
  Graph ints;  // integers, and the same value twice
  const auto i = ints.input("i", {3, 4}, DType::i32);
  ints.output(kiln::concat({i, i * 3.0, i}, 1), "c");
  out.push_back(std::move(ints));
  return out;
}

}  // namespace

TEST_CASE("concat: the GPU case's graphs NVRTC-compile for sm_80 and sm_90a") {
  kiln::Engine sm80(kiln::test::offline("sm_80")), sm90(kiln::test::offline("sm_90a"));
  int parts = 0;
  for (const Graph& g : concat_graphs()) {
    CAPTURE(g.to_json());
    for (const auto& name : kernel_names(g)) parts += name.find("concat_") != std::string::npos;
    for (kiln::Engine* e : {&sm80, &sm90}) CHECK_FALSE(kiln::Plan(g).compile(*e).empty());
  }
  CHECK(parts >= 3 * 3 * 21);
}

TEST_CASE("concat: the fp64 model of a fused plan puts every part in place, as the unfused one") {
  // The GPU checks compare with the model of each plan (tests/engine/reference.cpp): its parts
  // are several kernels writing one value, which the model must assemble before reading it.
  auto rng = kiln::test::make_rng(53);
  for (const Graph& g : concat_graphs()) {
    CAPTURE(g.to_json());
    const auto inputs = kiln::test::random_inputs(g, rng);
    const auto fused = kiln::test::model_plan(g, inputs, true).model;
    const auto unfused = kiln::test::model_plan(g, inputs, false).model;
    int bad = 0;
    for (int o : g.outputs())
      for (std::size_t i = 0; i < unfused[std::size_t(o)].size(); ++i) {
        const double f = fused[std::size_t(o)][i], u = unfused[std::size_t(o)][i];
        bad += std::isnan(f) || std::fabs(f - u) > 0x1p-5 * (1 + std::fabs(u));
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("gpu: concat of 1 to 9 operands of mixed producers matches the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(52);
  const std::vector<Graph> graphs = concat_graphs();
  for (const Graph& g : graphs) {
    CAPTURE(g.to_json());
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
  }
  MESSAGE(fmt::format("{} concat graphs", graphs.size()));
}
