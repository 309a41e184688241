// argmax and argmin: their result (i64, keepdim), errors, plans (a prologue fused, a gather of
// the positions), and on the GPU against the fp64 reference along every axis, with ties (values
// on a grid of halves) and NaNs, rows of 1 to 4099 and strided views.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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

kiln::Value arg(const char* op, kiln::Value x, std::int64_t axis, bool keepdim = false) {
  return kiln::apply(op, {x}, Attrs().set("axis", axis).set("keepdim", keepdim));
}

// Inputs on a grid of halves in [-3, 3] (many ties; the prologue's 2x + 1 exact), with NaNs in
// a few places where `nans`.
kiln::test::HostInputs grid_inputs(const Graph& g, std::mt19937_64& rng, bool nans) {
  kiln::test::HostInputs in;
  for (const auto& n : g.nodes())
    if (n.op == "input") {
      const std::size_t count = std::size_t(kiln::numel_of(n.shape));
      in[n.name] = kiln::test::random_bytes(n.dtype, count, -3, 3, rng, 0.5);
      for (std::size_t i = 3; nans && i < count; i += 17)
        kiln::store_element(n.dtype, std::nan(""), in[n.name].data() + i * kiln::size_of(n.dtype));
    }
  return in;
}

// Runs `g` on `in` and compares each i64 output with the exact fp64 positions: exactly (a
// tolerance, or the reference's jittered models, would hide a tie broken the wrong way).
void check_exact(kiln::Engine& e, const Graph& g, const kiln::test::HostInputs& in) {
  const auto dev = kiln::test::upload(e, g, in);
  const auto exact = kiln::test::evaluate(g, in);
  auto out = kiln::Plan(g).run(e, dev.views);
  for (int o : g.outputs()) {
    const auto& n = g.node(o);
    if (!kiln::is_integer(n.dtype)) continue;
    std::vector<std::int64_t> got(std::size_t(kiln::numel_of(n.shape)));
    if (n.dtype == DType::i32) {
      std::vector<std::int32_t> narrow(got.size());
      out.at(n.name).copy_to_host(narrow.data());
      std::copy(narrow.begin(), narrow.end(), got.begin());
    } else {
      out.at(n.name).copy_to_host(got.data());
    }
    for (std::size_t i = 0; i < got.size(); ++i)
      if (double(got[i]) != exact[std::size_t(o)][i])
        FAIL_CHECK(n.name, "[", i, "]: got ", got[i], ", want ", exact[std::size_t(o)][i]);
  }
}

}  // namespace

TEST_CASE("argmax and argmin: i64 positions, keepdim, and errors naming the call") {
  const auto x = desc({4, 7, 5}, DType::bf16);
  const auto r = kiln::infer("argmax", {x}, Attrs().set("axis", 1));
  CHECK(r.shape == Shape{4, 5});
  CHECK(r.dtype == DType::i64);
  CHECK(kiln::infer("argmin", {x}, Attrs().set("keepdim", true)).shape == Shape{4, 7, 1});
  CHECK_THROWS_WITH_AS(kiln::infer("argmax", {x}, Attrs().set("axis", 3)),
                       "argmax(x: bf16[4, 7, 5]): axis 3 is out of range for rank 3",
                       kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("argmax", {desc({4}, DType::i32)}), kiln::DtypeError);
  CHECK_THROWS_AS(kiln::infer("argmax", {desc({4, 0}, DType::f32)}), kiln::ShapeError);
  Graph g;
  const auto y = arg("argmax", g.input("x", {3, 9}, DType::f32) * 2.0, -1);
  g.output(y, "y");
  CHECK(kiln::Plan(g).kernels().size() == 1);  // the prologue fused
  Graph h;  // greedy decoding: the positions pick rows of a table
  const auto w = h.input("w", {9, 16}, DType::bf16);
  h.output(kiln::embedding(w, kiln::argmax(h.input("logits", {4, 9}, DType::f32))) + 1.0, "next");
  CHECK(kiln::Plan(h).kernels().size() == 2);
}

TEST_CASE("gpu: argmax and argmin along every axis match the fp64 reference, ties and NaNs" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(141);
  const std::vector<Shape> shapes = {{1}, {5, 1}, {3, 33, 7}, {2, 4099}, {64, 50}};
  for (const char* op : {"argmax", "argmin"})
    for (DType t : kiln::kFloatDTypes)
      for (const Shape& s : shapes)
        for (std::int64_t axis = -std::int64_t(s.size()); axis < std::int64_t(s.size()); ++axis)
          for (bool nans : {false, true}) {
            Graph g;
            g.output(arg(op, g.input("x", s, t) * 2.0 + 1.0, axis, axis == -1), "y");
            CAPTURE(g.to_json());
            check_exact(e, g, grid_inputs(g, rng, nans));
          }
  Graph g;  // a transposed view read in place, and the greedy-decoding gather
  const auto xt = kiln::apply("transpose", {g.input("x", {37, 6}, DType::f32)});
  const auto pos = arg("argmax", xt, -1);
  g.output(pos, "pos");
  g.output(kiln::embedding(g.input("w", {37, 8}, DType::f32), pos), "rows");
  const auto in = grid_inputs(g, rng, false);
  check_exact(e, g, in);
  for (const auto& f : kiln::test::check_inputs_on_gpu(e, g, in, true)) FAIL_CHECK(f);
}

TEST_CASE("sum, max and min of integers: exact, sum into i64, by the arg family") {
  const auto x = desc({4, 7}, DType::i32);
  CHECK(kiln::infer("sum", {x}, {}).dtype == DType::i64);
  CHECK(kiln::infer("max", {x}, {}).dtype == DType::i32);
  CHECK_THROWS_AS(kiln::infer("mean", {x}, {}), kiln::DtypeError);
  CHECK_THROWS_AS(kiln::infer("softmax", {x}, {}), kiln::DtypeError);
  Graph g;
  g.output(kiln::reduce("sum", g.input("x", {4, 7}, DType::i64)), "y");
  const auto k = kiln::Plan(g).kernels();
  REQUIRE(k.size() == 1);
  CHECK(k[0].name.find("__int") != std::string::npos);
}

TEST_CASE(
    "gpu: integer sum, max and min along every axis and over all match exact sums; an i64 "
    "sum wraps" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(142);
  for (DType t : {DType::i32, DType::i64})
    for (const char* op : {"sum", "max", "min"})
      for (const Shape& s : std::vector<Shape>{{1}, {3, 33, 7}, {2, 4099}})
        for (std::int64_t axis = -1; axis < std::int64_t(s.size()); ++axis) {
          Graph g;  // axis -1 here stands for "all"
          const auto x = g.input("x", s, t);
          g.output(axis < 0 ? kiln::reduce_all(op, x, true) : kiln::reduce(op, x, false, axis),
                   "y");
          CAPTURE(g.to_json());
          kiln::test::HostInputs in;
          in["x"] = kiln::test::random_bytes(t, std::size_t(kiln::numel_of(s)), -1e6, 1e6, rng, 1);
          check_exact(e, g, in);
        }
  Graph g;  // i64 values near 2^62: their sum wraps as two's complement, as torch's
  g.output(kiln::reduce("sum", g.input("x", {5}, DType::i64)), "y");
  const std::vector<std::int64_t> x = {std::int64_t(1) << 62, std::int64_t(1) << 62, 3, -1, 7};
  const kiln::Tensor t = e.from_host({5}, DType::i64, x.data());
  std::int64_t got = 0;
  kiln::Plan(g).run(e, {{"x", t.view()}}).at("y").copy_to_host(&got);
  std::uint64_t want = 0;
  for (std::int64_t v : x) want += std::uint64_t(v);
  CHECK(got == std::int64_t(want));
}
