// slice: its shape rule and errors, where a matrix product's kernel writes slices of its columns
// (QKV: one kernel, three outputs) and where a slice copies, and on the GPU against the fp64
// reference, fused and unfused.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/families/gemm/gemm_problem.hpp"
#include "engine/families/rows/rows.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

kiln::Attrs range(std::int64_t axis, std::int64_t start, std::int64_t stop) {
  return kiln::Attrs().set("axis", axis).set("start", start).set("stop", stop);
}

template <class E>
std::string error_of(const kiln::TensorView& x, const kiln::Attrs& a, const char* op = "slice") {
  try {
    kiln::infer(op, {x}, a);
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

// x[t, c] @ w[3c, c]ᵀ (+ bias, gelu), its columns sliced into q, k, v; `whole`: the product is
// an output too.
Graph qkv(std::int64_t t, std::int64_t c, DType dt, bool epilogue, bool whole = false) {
  Graph g;
  const auto x = g.input("x", {t, c}, dt);
  const auto w = g.input("w", {3 * c, c}, dt);
  auto y =
      epilogue ? kiln::gelu(kiln::linear(x, w, g.input("b", {3 * c}, dt))) : kiln::linear(x, w);
  if (whole) g.output(y, "y");
  g.output(kiln::slice(y, -1, 0, c), "q");
  g.output(kiln::slice(y, 1, c, 2 * c), "k");
  g.output(kiln::slice(y, -1, -c, 3 * c), "v");
  return g;
}

// Slices the product's kernel does not write: each is a copy kernel.
std::vector<Graph> copied_slices(DType t) {
  std::vector<Graph> out;
  {
    Graph g;  // an input's middle columns, then a row op
    g.output(kiln::softmax(kiln::slice(g.input("x", {6, 40}, t), 1, 3, 36)), "y");
    out.push_back(g);
  }
  {
    Graph g;  // rows of a product, and a slice of a slice
    const auto y = kiln::matmul(g.input("a", {9, 24}, t), g.input("b", {24, 20}, t));
    g.output(kiln::slice(y, 0, 2, 7), "rows");
    g.output(kiln::slice(kiln::slice(y, -1, 1, 19), -1, 2, 5) * 2.0, "inner");
    out.push_back(g);
  }
  {
    Graph g;  // a middle axis of a 3-D input, as an output
    g.output(kiln::slice(g.input("x", {3, 7, 5}, t), 1, -5, -1), "y");
    out.push_back(g);
  }
  {
    Graph g;  // matmul with a 1-D b: the last axis is M
    const auto y = kiln::matmul(g.input("a", {12, 16}, t), g.input("b", {16}, t));
    g.output(kiln::slice(y, 0, 4, 11), "y");
    out.push_back(g);
  }
  return out;
}

// Slices of products' columns, written by the products' kernels: QKV shapes that are not
// multiples of any tile, few rows (the skinny path), batch dims, an epilogue, a slice read by
// a later kernel, the whole product read too.
std::vector<Graph> windowed(DType t) {
  std::vector<Graph> out = {qkv(1, 40, t, false), qkv(7, 24, t, true), qkv(300, 72, t, false),
                            qkv(130, 64, t, true, true)};
  {
    Graph g;
    const auto x = g.input("x", {2, 5, 40}, t);
    const auto y = kiln::linear(x, g.input("w", {30, 40}, t));
    g.output(kiln::slice(y, 2, 0, 17), "a");
    g.output(kiln::softmax(kiln::slice(y, -1, 17, 30)), "b");
    out.push_back(g);
  }
  return out;
}

}  // namespace

TEST_CASE("slice: its shape, negative indexes, and errors naming the range") {
  const auto x = desc({4, 10}, DType::f32);
  CHECK(kiln::infer("slice", {x}, range(-1, 2, 7)).shape == Shape{4, 5});
  CHECK(kiln::infer("slice", {x}, range(0, -3, 4)).shape == Shape{3, 10});
  CHECK(kiln::infer("slice", {x}, range(1, 6, 6)).shape == Shape{4, 0});
  CHECK(kiln::infer("slice", {desc({4, 10}, DType::bf16)}, range(1, 0, 10)).dtype == DType::bf16);
  CHECK(error_of<kiln::ShapeError>(x, range(-1, 2, 11)) ==
        "slice(x: f32[4, 10]): stop 11 is outside axis -1 of extent 10");
  CHECK(error_of<kiln::ShapeError>(x, range(0, -5, 2)) ==
        "slice(x: f32[4, 10]): start -5 is outside axis 0 of extent 4");
  CHECK(error_of<kiln::ShapeError>(x, range(1, 6, 5)) ==
        "slice(x: f32[4, 10]): stop 5 comes before start 6 (axis 1 of extent 10)");
  CHECK(error_of<kiln::ShapeError>(x, range(2, 0, 1)) ==
        "slice(x: f32[4, 10]): axis 2 is outside x's 2 dims");
  CHECK(error_of<kiln::ArgumentError>(x, range(1, 0, 1).erase("stop")) ==
        "slice(x: f32[4, 10]): needs attributes start and stop");
  CHECK(error_of<kiln::ArgumentError>(x, range(1, 0, 1).set("shape", {4, 1})) ==
        "slice: unknown attribute 'shape'; slice's attributes are axis, start, stop");
  CHECK(error_of<kiln::ArgumentError>(x, kiln::Attrs().set("shape", {40}).set("start", 0),
                                      "reshape") ==
        "reshape: unknown attribute 'start'; reshape's attributes are shape");
  CHECK_THROWS_AS(kiln::infer("matmul", {x, desc({10, 2}, DType::f32)}, range(1, 0, 1)),
                  kiln::ArgumentError);
  Graph g;
  const auto in = g.input("x", {-1, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(kiln::slice(in, 1, 2, 4),
                       "node 't1': slice of a value with a dynamic dim (x); views take static "
                       "shapes",
                       kiln::ShapeError);
}

TEST_CASE("a slice of a product's columns is written by the product's kernel; others copy") {
  for (bool epilogue : {false, true}) {
    CAPTURE(epilogue);
    const Graph g = qkv(64, 32, DType::bf16, epilogue);
    const auto fused = kiln::Plan(g).kernels();
    REQUIRE(fused.size() == 1);
    CHECK(fused[0].name.find("linear") != std::string::npos);
    CHECK(fused[0].ops.back() == "v");  // the windows are listed among its ops
    CHECK(kiln::Plan(g, false).kernels().size() == (epilogue ? 5 : 4));
    // The JSON keeps the ranges.
    CHECK(Graph::parse(g.to_json()).to_json() == g.to_json());
    CHECK(g.to_json().find(R"("start":-32,"stop":96)") != std::string::npos);
  }
  CHECK(kiln::Plan(qkv(64, 32, DType::f32, true, true)).kernels().size() == 1);
  {
    Graph g;  // an epilogue output whose first operand is a number (not a slice: column 0)
    const auto h =
        kiln::linear(g.input("x", {64, 32}, DType::f32), g.input("w", {48, 32}, DType::f32));
    g.output(2.0 - h, "y");
    CHECK(kiln::Plan(g).kernels("sm_90a").size() == 1);
  }
  const std::vector<Graph> copies = copied_slices(DType::f32);
  const auto input_slice = kiln::Plan(copies[0]).kernels();
  REQUIRE(input_slice.size() == 2);
  CHECK(input_slice[0].name.rfind("slice_f32", 0) == 0);
  // the product, the rows' copy, the outer slice a window of the product, the inner one a copy
  // fused with nothing (a view anchors its kernel), then the scale.
  CHECK(kiln::Plan(copies[1]).kernels().size() == 4);
  CHECK(kiln::Plan(copies[2]).kernels().size() == 1);
  CHECK(kiln::Plan(copies[3]).kernels().size() == 2);
  const std::vector<Graph> windows = windowed(DType::f32);
  CHECK(kiln::Plan(windows.back()).kernels().size() == 2);  // the product, then the softmax
}

TEST_CASE("a product's output windows: bounds, the address of column 0, the epilogue's width") {
  // linear x[16, 32] @ w[96, 32]ᵀ written as q (columns 0..31) and v (64..95), bf16 at 0x1000.
  kiln::GemmKernel k;
  k.op = &kiln::ops::find_op("linear");
  k.a = desc({16, 32}, DType::bf16);
  k.b = desc({96, 32}, DType::bf16);
  kiln::TensorView q = desc({16, 32}, DType::bf16), v = q;
  q.data = 0x1000, v.data = 0x2000;
  k.outputs = {q, v};
  k.column0 = {0, 64};
  k.epilogue = kiln::identity_epilogue(DType::bf16);
  k.epilogue.outputs.push_back(DType::bf16);
  k.epilogue.results.push_back(k.epilogue.results[0]);
  kiln::GemmProblem p = kiln::gemm_problem(k, "qkv");
  CHECK(p.n == 96);
  CHECK((p.slots[0].lo == 0 && p.slots[0].hi == 32 && p.slots[0].data == 0x1000));
  CHECK((p.slots[1].lo == 64 && p.slots[1].hi == 96 && p.slots[1].offset == -128));
  CHECK(p.slots[1].data == 0x2000 - 128);  // where v's column 0 would be: 64 bf16 before it
  CHECK(p.slots[1].row == 32);             // v's own rows
  CHECK(kiln::epilogue_columns(p) == 8);
  k.column0 = {0, 60};  // a window that does not start at a multiple of 8: one column a thread
  CHECK(kiln::epilogue_columns(kiln::gemm_problem(k, "qkv")) == 1);
  k.column0 = {0, 70};  // past the product
  CHECK_THROWS_WITH_AS(kiln::gemm_problem(k, "qkv"),
                       "qkv: output 1 holds columns [70, 102) of a product of 96",
                       kiln::ShapeError);
  k.column0.clear();  // whole outputs: misaligned, or N not a multiple of 8
  k.outputs = {desc({16, 96}, DType::bf16)};
  k.epilogue = kiln::identity_epilogue(DType::bf16);
  CHECK(kiln::epilogue_columns(kiln::gemm_problem(k, "y")) == 8);
  k.outputs[0].data += 2;
  CHECK(kiln::epilogue_columns(kiln::gemm_problem(k, "y")) == 1);
  k.b = desc({90, 32}, DType::bf16);
  k.outputs = {desc({16, 90}, DType::bf16)};
  CHECK(kiln::epilogue_columns(kiln::gemm_problem(k, "y")) == 1);
}

TEST_CASE("the reference's model of a plan stores the slices a product's kernel writes") {
  auto rng = kiln::test::make_rng(84);
  std::vector<Graph> graphs = windowed(DType::f32);
  for (Graph& g : copied_slices(DType::f32)) graphs.push_back(std::move(g));
  for (const Graph& g : graphs) {
    CAPTURE(g.to_json());
    for (const auto& d : kiln::test::model_differences(g, rng, 1e-6)) FAIL_CHECK(d);
  }
}

TEST_CASE("gpu: slices, copied and as a product's windows, match the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(83);
  for (DType t : kiln::kFloatDTypes) {
    std::vector<Graph> graphs = copied_slices(t);
    for (Graph& g : windowed(t)) graphs.push_back(std::move(g));
    for (const Graph& g : graphs) {
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
    }
  }
  // Eager, of a view one element past a 16-byte boundary: a new contiguous tensor.
  std::vector<float> host(7 * 9);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  const kiln::Tensor x = e.from_host({7, 9}, DType::f32, host.data());
  kiln::TensorView shifted = x.view();
  shifted.shape = {6, 9};
  shifted.data += 9 * 4;
  const kiln::Tensor y = kiln::slice(e, shifted, 1, 3, 8);
  REQUIRE(y.shape() == Shape{6, 5});
  std::vector<float> got(30), want;
  y.copy_to_host(got.data());
  for (int r = 1; r < 7; ++r)
    for (int c = 3; c < 8; ++c) want.push_back(float(r * 9 + c));
  CHECK(got == want);
}
