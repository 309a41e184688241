// permute and transpose: their shape rule and errors, where they are read in place (every
// consumer that takes strides: elementwise chains, row ops, a product's operands) and where a
// copy runs (an output, a reshape of one), and on the GPU against the fp64 reference.
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

kiln::Value permute(kiln::Value x, std::vector<std::int64_t> dims) {
  return kiln::apply("permute", {x}, Attrs().set("dims", std::move(dims)));
}
kiln::Value transpose(kiln::Value x, std::int64_t d0, std::int64_t d1) {
  return kiln::apply("transpose", {x}, Attrs().set("dim0", d0).set("dim1", d1));
}

template <class E>
std::string error_of(const char* op, const kiln::TensorView& x, const Attrs& a) {
  try {
    kiln::infer(op, {x}, a);
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

// Graphs reading permuted views, each with the number of kernels its fused plan has.
std::vector<std::pair<Graph, std::size_t>> view_graphs(DType t) {
  std::vector<std::pair<Graph, std::size_t>> out;
  {
    Graph g;  // an elementwise chain reads an input's transpose in place
    const auto x = g.input("x", {40, 24}, t);
    g.output(kiln::exp(permute(x, {1, 0}) * 0.25) + g.input("b", {40}, t), "y");
    out.emplace_back(std::move(g), 1);
  }
  {
    Graph g;  // a row op along a transposed axis, its prologue on the view
    const auto x = g.input("x", {3, 33, 17}, t);
    g.output(kiln::softmax(transpose(x, 1, 2) * 2.0), "y");
    out.emplace_back(std::move(g), 1);
  }
  {
    Graph g;  // a product of a transposed operand, the operand an intermediate in the arena
    const auto a = kiln::tanh(g.input("a", {2, 48, 20}, t));
    const auto b = g.input("b", {2, 48, 36}, t);
    g.output(kiln::matmul(transpose(a, -1, -2), b), "y");
    out.emplace_back(std::move(g), 2);
  }
  {
    Graph g;  // a permute as an output: its copy
    g.output(permute(g.input("x", {3, 5, 7}, t), {2, 0, -2}), "y");
    out.emplace_back(std::move(g), 1);
  }
  {
    Graph g;  // a reshape of a transposed view copies it, in row-major order; a view of a view
    const auto x = g.input("x", {6, 10}, t);
    g.output(kiln::reshape(transpose(x, 0, 1), {5, 12}) * 3.0, "y");
    g.output(kiln::sigmoid(transpose(transpose(x, 0, 1), 1, 0)), "z");
    out.emplace_back(std::move(g), 3);
  }
  return out;
}

}  // namespace

TEST_CASE("permute and transpose: shapes, negative dims, and errors naming the dims") {
  const auto x = desc({2, 3, 5}, DType::bf16);
  CHECK(kiln::infer("permute", {x}, Attrs().set("dims", {2, 0, 1})).shape == Shape{5, 2, 3});
  CHECK(kiln::infer("permute", {x}, Attrs().set("dims", {-1, 1, 0})).shape == Shape{5, 3, 2});
  CHECK(kiln::infer("permute", {x}, Attrs().set("dims", {2, 0, 1})).dtype == DType::bf16);
  CHECK(kiln::infer("transpose", {x}, Attrs().set("dim0", 0).set("dim1", -1)).shape ==
        Shape{5, 3, 2});
  CHECK(kiln::infer("transpose", {x}).shape == Shape{3, 2, 5});  // dims 0 and 1 by default
  CHECK(error_of<kiln::ShapeError>("permute", x, Attrs().set("dims", {0, 0, 1})) ==
        "permute(x: bf16[2, 3, 5]): dims [0, 0, 1] names dim 0 twice; it must be a permutation "
        "of 0..2");
  CHECK(error_of<kiln::ShapeError>("permute", x, Attrs().set("dims", {1, 0})) ==
        "permute(x: bf16[2, 3, 5]): dims [1, 0] has 2 entries; x has 3 dims");
  CHECK(error_of<kiln::ShapeError>("transpose", x, Attrs().set("dim1", 3)) ==
        "transpose(x: bf16[2, 3, 5]): dim 3 is out of range for rank 3");
  CHECK(error_of<kiln::ArgumentError>("permute", x, {}).find("dims") != std::string::npos);
  Graph g;
  const auto in = g.input("x", {4, 6}, DType::f32);
  g.output(permute(in, {1, 0}), "y");
  CHECK(Graph::parse(g.to_json()).to_json() == g.to_json());
  CHECK(g.to_json().find(R"("dims":[1,0])") != std::string::npos);
}

TEST_CASE("a permuted view is read in place by every kernel that takes strides; copies elsewhere") {
  const auto graphs = view_graphs(DType::f32);
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const auto& [g, kernels] = graphs[i];
    CAPTURE(g.to_json());
    const auto k = kiln::Plan(g).kernels();
    CHECK(k.size() == kernels);
    std::size_t copies = 0;  // only the output's (graph 3) copies the view itself
    for (const auto& kernel : k)
      copies += kernel.name.rfind("permute", 0) == 0 || kernel.name.rfind("transpose", 0) == 0;
    CHECK(copies == (i == 3 ? 1u : 0u));
    CHECK(kiln::Plan(g, false).kernels().size() >= k.size());
  }
}

TEST_CASE("the reference's model of a plan reads a view in place as the view reorders it") {
  auto rng = kiln::test::make_rng(93);
  for (const auto& [g, kernels] : view_graphs(DType::f32)) {
    CAPTURE(g.to_json());
    for (const auto& d : kiln::test::model_differences(g, rng, 1e-5)) FAIL_CHECK(d);
  }
}

TEST_CASE("gpu: permuted views, read in place and copied, match the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(92);
  for (DType t : kiln::kFloatDTypes)
    for (const auto& [g, kernels] : view_graphs(t)) {
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
    }
  // Eager: a new contiguous tensor.
  std::vector<float> host(2 * 3);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  const kiln::Tensor x = e.from_host({2, 3}, DType::f32, host.data());
  const kiln::Tensor y = kiln::call(e, "transpose", {x.view()});
  REQUIRE(y.shape() == Shape{3, 2});
  std::vector<float> got(6);
  y.copy_to_host(got.data());
  CHECK(got == std::vector<float>{0, 3, 1, 4, 2, 5});
}
