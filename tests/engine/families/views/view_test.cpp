// reshape: its shape rule, where a plan shares the operand's memory (no kernel) and where it
// copies, and on the GPU against the fp64 reference, fused and unfused.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

kiln::Attrs shape(Shape s) { return kiln::Attrs().set("shape", std::move(s)); }

std::string error_of(const kiln::TensorView& x, Shape s) {
  try {
    kiln::infer("reshape", {x}, shape(std::move(s)));
  } catch (const kiln::ShapeError& e) {
    return e.what();
  }
  return "";
}

// reshape in the middle (shared memory), of an input, and as an output (copies).
std::vector<Graph> view_graphs(DType t) {
  std::vector<Graph> out;
  {
    Graph g;  // a kernel's result read by the next as another shape
    const auto x = g.input("x", {6, 40}, t);
    g.output(kiln::softmax(kiln::reshape(kiln::exp(x * 0.5), {12, 20})), "y");
    out.push_back(g);
  }
  {
    Graph g;  // an input reshaped: a copy, then a row op
    g.output(kiln::softmax(kiln::reshape(g.input("x", {3, 4, 10}, t), {-1, 20}) * 2.0), "y");
    out.push_back(g);
  }
  {
    Graph g;  // a view as an output, and the value it views as another
    const auto h = kiln::tanh(g.input("x", {8, 16}, t));
    g.output(h, "h");
    g.output(kiln::reshape(h, {4, 32}), "v");
    out.push_back(g);
  }
  {
    Graph g;  // products through a flatten and back (the spectral autoencoder's pattern)
    const auto x = g.input("x", {5, 4, 24}, t);
    const auto h = kiln::gelu(kiln::linear(x, g.input("w", {16, 24}, t), g.input("b", {16}, t)));
    const auto z = kiln::matmul(kiln::reshape(h, {5, 64}), g.input("basis", {64, 12}, t));
    g.output(kiln::reshape(kiln::relu(z), {5, 3, 4}) + 1.0, "y");
    out.push_back(g);
  }
  {
    Graph g;  // unit dims added to inputs (one transposed, so strided), read in place
    const auto x = g.input("x", {2, 3, 4, 5}, t);
    const auto v = kiln::apply("permute", {g.input("t", {5, 3}, t)},
                               kiln::Attrs().set("dims", std::vector<std::int64_t>{1, 0}));
    const auto c = kiln::reshape(g.input("c", {3}, t), {3, 1, 1});
    g.output(x * kiln::reshape(v, {3, 1, 5}) + c, "y");
    out.push_back(g);
  }
  {
    Graph g;  // unit dims added to a padded input (a remap view: no memory of its own)
    const auto padded = kiln::apply("pad", {g.input("x", {3, 4}, t)},
                                    kiln::Attrs().set("pads", std::vector<std::int64_t>{1, 1}));
    g.output(kiln::reshape(padded, {3, 1, 6}) * 2.0, "y");
    out.push_back(g);
  }
  return out;
}

}  // namespace

TEST_CASE("reshape: its shape, -1 inferred, and errors naming the shapes") {
  CHECK(kiln::infer("reshape", {desc({4, 6}, DType::f32)}, shape({3, 8})).shape == Shape{3, 8});
  CHECK(kiln::infer("reshape", {desc({4, 6}, DType::bf16)}, shape({2, -1, 3})).shape ==
        Shape{2, 4, 3});
  CHECK(kiln::infer("reshape", {desc({4, 6}, DType::f16)}, shape({24})).dtype == DType::f16);
  CHECK(kiln::infer("reshape", {desc({0, 6}, DType::f32)}, shape({3, 0})).shape == Shape{3, 0});
  CHECK(error_of(desc({4, 6}, DType::f32), {5, 5}) ==
        "reshape(x: f32[4, 6]): shape [5, 5] holds 25 elements, x has 24");
  CHECK(error_of(desc({4, 6}, DType::f32), {5, -1}).find("no extent for -1") != std::string::npos);
  CHECK(error_of(desc({4, 6}, DType::f32), {-1, -1}).find("one of them may be -1") !=
        std::string::npos);
  CHECK_THROWS_AS(kiln::infer("reshape", {desc({4, 6}, DType::f32)}), kiln::ArgumentError);
}

TEST_CASE("reshape shares the memory of a value the plan writes; it copies the caller's unless "
          "it only adds or removes unit dims") {
  const std::vector<Graph> graphs = view_graphs(DType::f32);
  // exp, then softmax reading its result as [12, 20]: two kernels, no copy.
  CHECK(kiln::Plan(graphs[0]).kernels().size() == 2);
  // an input reshaped: a copy kernel, then softmax.
  const auto copied = kiln::Plan(graphs[1]).kernels();
  REQUIRE(copied.size() == 2);
  CHECK(copied[0].name.rfind("reshape_f32", 0) == 0);
  // a view as an output copies what it views (an output itself).
  CHECK(kiln::Plan(graphs[2]).kernels().size() == 2);
  // linear+gelu, matmul+relu, then the add reading relu's result as [5, 3, 4]: two views that
  // share memory, no copy.
  CHECK(kiln::Plan(graphs[3]).kernels().size() == 3);
  CHECK(kiln::Plan(graphs[3], false).kernels().size() == 5);  // linear gelu matmul relu add
  // Unit dims added to a transposed input and to a [3] input: read in place, no copy.
  const auto units = kiln::Plan(graphs[4]).kernels();
  REQUIRE(units.size() == 1);
  CHECK(units[0].name.find("reshape") == std::string::npos);
  // Unit dims added to a padded input (a remap view, read at computed positions, no memory of
  // its own): the pad is copied, and the reshape reads that copy.
  const auto copied_pad = kiln::Plan(graphs[5]).kernels();
  REQUIRE(copied_pad.size() == 2);
  CHECK(copied_pad[0].name.rfind("pad_f32", 0) == 0);
  // The attribute survives JSON.
  const Graph back = Graph::parse(graphs[3].to_json());
  CHECK(back.to_json() == graphs[3].to_json());
}

TEST_CASE("gpu: reshape through kernels, of inputs and as outputs, matches the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(71);
  for (DType t : kiln::kFloatDTypes)
    for (const Graph& g : view_graphs(t)) {
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
    }
  // Eager: a new contiguous tensor.
  std::vector<float> host(24);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  const kiln::Tensor x = e.from_host({4, 6}, DType::f32, host.data());
  const kiln::Tensor y = kiln::call(e, "reshape", {x.view()}, shape({2, 12}));
  CHECK(y.shape() == Shape{2, 12});
  std::vector<float> got(24);
  y.copy_to_host(got.data());
  CHECK(got == host);
}
