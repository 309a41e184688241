// expand and broadcast_to: their shape rule and errors, read in place (a stride of 0) by every
// consumer that takes strides, copied only as an output, and on the GPU against the fp64
// reference.
#include <doctest/doctest.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

kiln::Value expand(kiln::Value x, std::vector<std::int64_t> shape, const char* op = "expand") {
  return kiln::apply(op, {x}, Attrs().set("shape", std::move(shape)));
}

std::string shape_error(const kiln::TensorView& x, std::vector<std::int64_t> shape) {
  try {
    kiln::infer("expand", {x}, Attrs().set("shape", std::move(shape)));
  } catch (const kiln::ShapeError& e) {
    return e.what();
  }
  return "";
}

// Graphs reading expanded views, each with the number of kernels its fused plan has.
std::vector<std::pair<Graph, std::size_t>> expand_graphs(DType t) {
  std::vector<std::pair<Graph, std::size_t>> out;
  {
    Graph g;  // a column repeated along rows and a new batch dim, read by a chain in place
    const auto c = g.input("c", {24, 1}, t);
    g.output(kiln::exp(expand(c, {3, 24, 40}) * 0.25) + g.input("x", {3, 24, 40}, t), "y");
    out.emplace_back(std::move(g), 1);
  }
  {
    Graph g;  // a row op along an expanded axis (every row constant), its prologue on the view
    const auto x = g.input("x", {5, 1}, t);
    g.output(kiln::softmax(expand(x, {-1, 33}, "broadcast_to") * 2.0), "y");
    out.emplace_back(std::move(g), 1);
  }
  {
    Graph g;  // an expanded intermediate as a product's operand
    const auto a = kiln::tanh(g.input("a", {1, 48, 20}, t));
    const auto b = g.input("b", {2, 20, 36}, t);
    g.output(kiln::matmul(expand(a, {2, 48, 20}), b), "y");
    out.emplace_back(std::move(g), 2);
  }
  {
    Graph g;  // an expand as an output: its copy
    g.output(expand(g.input("x", {7}, t), {3, 5, 7}), "y");
    out.emplace_back(std::move(g), 1);
  }
  return out;
}

}  // namespace

TEST_CASE("expand and broadcast_to: shapes, -1, new leading dims, and errors naming the dims") {
  const auto x = desc({3, 1, 5}, DType::bf16);
  CHECK(kiln::infer("expand", {x}, Attrs().set("shape", {3, 4, 5})).shape == Shape{3, 4, 5});
  CHECK(kiln::infer("expand", {x}, Attrs().set("shape", {2, -1, 7, -1})).shape ==
        Shape{2, 3, 7, 5});
  CHECK(kiln::infer("broadcast_to", {x}, Attrs().set("shape", {3, 0, 5})).shape == Shape{3, 0, 5});
  CHECK(kiln::infer("expand", {x}, Attrs().set("shape", {3, 4, 5})).dtype == DType::bf16);
  CHECK(shape_error(x, {3, 4, 6}) ==
        "expand(x: bf16[3, 1, 5]): x's dim 2 has extent 5, which expands to nothing but itself "
        "(shape [3, 4, 6])");
  CHECK(shape_error(x, {4, 5}) ==
        "expand(x: bf16[3, 1, 5]): shape [4, 5] has fewer dims than x (3)");
  CHECK(shape_error(x, {-1, 3, 4, 5}) ==
        "expand(x: bf16[3, 1, 5]): shape [-1, 3, 4, 5] keeps (-1) dim 0, which x does not have");
  CHECK(shape_error(x, {3, -2, 5}).find("extent -2") != std::string::npos);
  CHECK_THROWS_AS(kiln::infer("expand", {x}, {}), kiln::ArgumentError);
  Graph g;
  g.output(expand(g.input("x", {4, 1}, DType::f32), {2, 4, 6}), "y");
  CHECK(Graph::parse(g.to_json()).to_json() == g.to_json());
}

TEST_CASE(
    "an expanded view is read in place by every kernel that takes strides; copied as an "
    "output") {
  const auto graphs = expand_graphs(DType::f32);
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const auto& [g, kernels] = graphs[i];
    CAPTURE(g.to_json());
    const auto k = kiln::Plan(g).kernels();
    CHECK(k.size() == kernels);
    std::size_t copies = 0;
    for (const auto& kernel : k)
      copies += kernel.name.rfind("expand", 0) == 0 || kernel.name.rfind("broadcast_to", 0) == 0;
    CHECK(copies == (i == 3 ? 1u : 0u));
  }
}

TEST_CASE("the reference's model of a plan reads an expanded view as it repeats") {
  auto rng = kiln::test::make_rng(95);
  for (const auto& [g, kernels] : expand_graphs(DType::f32)) {
    CAPTURE(g.to_json());
    for (const auto& d : kiln::test::model_differences(g, rng, 1e-5)) FAIL_CHECK(d);
  }
}

TEST_CASE("gpu: expanded views, read in place and copied, match the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(96);
  for (DType t : kiln::kFloatDTypes)
    for (const auto& [g, kernels] : expand_graphs(t)) {
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
    }
  // Eager: a new contiguous tensor of the repeated values.
  const std::vector<float> host = {1, 2, 3};
  const kiln::Tensor x = e.from_host({3, 1}, DType::f32, host.data());
  const kiln::Tensor y = kiln::call(e, "expand", {x.view()}, Attrs().set("shape", {2, 3, 2}));
  REQUIRE(y.shape() == Shape{2, 3, 2});
  std::vector<float> got(12);
  y.copy_to_host(got.data());
  CHECK(got == std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
}
