// var and std (with their correction) and reductions over several adjacent axes: shape rules,
// errors, the front ends' list form, NVRTC compiles, and on the GPU against fp64 loops written
// here (not the ops' references), on contiguous and channels_last views.
#include <fmt/format.h>

#include <cmath>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "ops/op.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

Attrs axes(std::vector<std::int64_t> a, bool keepdim = false) {
  return Attrs().set("axis", std::move(a)).set("keepdim", keepdim);
}

// What a reduction `op` over the adjacent axes [a0, a1] of x (row-major values of `shape`)
// gives, in fp64: one value per element of the kept axes, in their row-major order.
std::vector<double> reduce_ref(const std::string& op, const std::vector<double>& x,
                               const Shape& shape, std::size_t a0, std::size_t a1,
                               double correction) {
  std::int64_t outer = 1, n = 1, inner = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) (d < a0 ? outer : d <= a1 ? n : inner) *= shape[d];
  std::vector<double> out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      double s = 0, hi = -INFINITY, lo = INFINITY;
      for (std::int64_t r = 0; r < n; ++r) {
        const double v = x[std::size_t((o * n + r) * inner + i)];
        s += v, hi = std::max(hi, v), lo = std::min(lo, v);
      }
      const double mean = s / double(n);
      double m2 = 0;
      for (std::int64_t r = 0; r < n; ++r) {
        const double d = x[std::size_t((o * n + r) * inner + i)] - mean;
        m2 += d * d;
      }
      const double var = m2 / std::max(0.0, double(n) - correction);
      out.push_back(op == "sum"    ? s
                    : op == "mean" ? mean
                    : op == "max"  ? hi
                    : op == "min"  ? lo
                    : op == "var"  ? var
                                   : std::sqrt(var));
    }
  return out;
}

}  // namespace

TEST_CASE("var, std and reductions over several axes: shapes, keepdim, and errors") {
  const auto x = desc({2, 3, 4, 5}, DType::f32);
  CHECK(kiln::infer("var", {x}).shape == Shape{2, 3, 4});
  CHECK(kiln::infer("std", {x}, Attrs().set("axis", 1).set("correction", 0)).shape ==
        Shape{2, 4, 5});
  CHECK(kiln::infer("sum", {x}, axes({1, 2})).shape == Shape{2, 5});
  CHECK(kiln::infer("mean", {x}, axes({-1, -2}, true)).shape == Shape{2, 3, 1, 1});
  CHECK(kiln::infer("var", {x}, axes({0, 1, 2, 3})).shape == Shape{});
  CHECK(kiln::infer("max", {x}, axes({2})).shape == Shape{2, 3, 5});
  CHECK(kiln::infer("std", {desc({7}, DType::bf16)}, axes({0}, true)).shape == Shape{1});
  CHECK(kiln::infer("var", {desc({3, 1}, DType::f16)}).dtype == DType::f16);
  CHECK_THROWS_WITH_AS(kiln::infer("sum", {x}, axes({0, 2})),
                       doctest::Contains("axis [0, 2] leaves a gap between 0 and 2"),
                       kiln::ShapeError);
  CHECK_THROWS_WITH_AS(kiln::infer("min", {x}, axes({1, -3})),
                       doctest::Contains("names axis 1 twice"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(kiln::infer("sum", {x}, axes({1, 4})),
                       doctest::Contains("axis 4 is out of range for rank 4"), kiln::ShapeError);
  CHECK_THROWS_WITH_AS(kiln::infer("sum", {x}, axes({})), doctest::Contains("names no axis"),
                       kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("var", {x}, Attrs().set("correction", -1)),
                       doctest::Contains("correction=-1 is not >= 0"), kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("softmax", {x}, axes({2, 3})),
                       doctest::Contains("is not an integer"), kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("sum", {x}, Attrs().set("correction", 1)),
                       doctest::Contains("unknown attribute 'correction'"), kiln::ArgumentError);
  CHECK_THROWS_AS(kiln::infer("var", {desc({3, 0, 2}, DType::f32)}, axes({1, 2})),
                  kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("std", {desc({3}, DType::boolean)}), kiln::DtypeError);
}

TEST_CASE("var and std: the fp64 references divide by n - correction, as torch") {
  const kiln::ops::OpDef& var = kiln::ops::find_op("var");
  const kiln::ops::OpDef& sd = kiln::ops::find_op("std");
  const double x[4] = {1, 2, 3, 4};
  double out = 0;
  var.row_reference(x, 4, nullptr, nullptr, Attrs(), &out);
  CHECK(out == doctest::Approx(5.0 / 3));
  var.row_reference(x, 4, nullptr, nullptr, Attrs().set("correction", 0), &out);
  CHECK(out == doctest::Approx(1.25));
  sd.row_reference(x, 4, nullptr, nullptr, Attrs().set("correction", 2), &out);
  CHECK(out == doctest::Approx(std::sqrt(2.5)));
  var.row_reference(x, 1, nullptr, nullptr, Attrs(), &out);
  CHECK(std::isnan(out));  // 0 / 0
  var.row_reference(x, 2, nullptr, nullptr, Attrs().set("correction", 3), &out);
  CHECK(std::isinf(out));  // 0.5 / 0
}

TEST_CASE("reductions over several axes: the JSON and C++ front ends take the list form") {
  const Graph g = Graph::parse(R"({
    "inputs":  [{"name": "x", "shape": [2, 3, 4, 5], "dtype": "f32"}],
    "nodes":   [{"name": "v", "op": "var", "args": ["x"],
                 "attrs": {"axis": [1, 2], "correction": 0, "keepdim": true}},
                {"name": "s", "op": "sum", "args": ["x"], "attrs": {"axis": [-2, -1]}}],
    "outputs": ["v", "s"]
  })");
  CHECK(g.node(g.find("v")).shape == Shape{2, 1, 1, 5});
  CHECK(g.node(g.find("s")).shape == Shape{2, 3});
  CHECK(Graph::parse(g.to_json()).to_json() == g.to_json());
  Graph h;
  auto x = h.input("x", {6, 7, 8}, DType::bf16);
  CHECK(h.node(kiln::reduce("mean", x, {0, 1}).id()).shape == Shape{8});
  const auto s = kiln::variance("std", x, {-1}, 0, true);
  CHECK(h.node(s.id()).shape == Shape{6, 7, 1});
  CHECK(h.node(s.id()).attrs.number("correction") == 0.0);
  CHECK_THROWS_AS(Graph::parse(R"({"inputs": [{"name": "x", "shape": [2, 3], "dtype": "f32"}],
    "nodes": [{"name": "s", "op": "sum", "args": ["x"], "attrs": {"axis": [0, 1.5]}}],
    "outputs": ["s"]})"),
                  kiln::GraphError);
}

TEST_CASE(
    "var, std and reductions over several axes NVRTC-compile for sm_80 and sm_90a, "
    "prologue fused") {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    for (const char* op : {"sum", "max", "var", "std"})
      for (const std::vector<std::int64_t>& a :
           std::vector<std::vector<std::int64_t>>{{-1}, {1, 2}, {2, 3}, {0, 1}}) {
        Graph g;
        auto x = g.input("x", {2, 6, 9, 33}, DType::bf16);
        g.output(kiln::reduce(op, kiln::silu(x * 0.5), a));
        CAPTURE(g.to_json());
        const auto records = kiln::Plan(g).compile(e);
        CHECK(records.size() == 1);  // prologue and reduction in one kernel
      }
  }
}

TEST_CASE("gpu: var and std along an axis, over several and over all, against fp64 loops" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(48);
  struct Case {
    Shape shape;
    std::size_t a0, a1;
    double mean;  // values around a large mean: the statistic must not lose them to it
  };
  const std::vector<Case> cases = {{{1, 1}, 1, 1, 0},        {{3, 7}, 1, 1, 0},
                                   {{5, 1000}, 1, 1, 1000},  {{2, 4097}, 0, 1, -300},
                                   {{4, 9, 1, 13}, 1, 2, 0}, {{2, 33, 5, 3}, 1, 3, 50},
                                   {{7, 300, 5}, 1, 1, 0},   {{2, 65536}, 1, 1, 1000},
                                   {{3, 5, 7}, 0, 2, 0},     {{64, 3, 40}, 0, 0, 100}};
  for (DType t : kiln::kFloatDTypes)
    for (const Case& c : cases)
      for (const char* op : {"var", "std"})
        for (double correction : {0.0, 1.0}) {
          const auto n = std::size_t(kiln::numel_of(c.shape));
          std::vector<double> xs(n);
          std::uniform_real_distribution<double> u(-2, 2);
          for (double& v : xs) v = c.mean + u(rng);
          const auto host = kiln::test::encode(t, xs);
          xs = kiln::test::decode(t, host);  // the values the GPU reads
          const kiln::Tensor x = e.from_host(c.shape, t, host.data());
          const std::int64_t last = std::int64_t(c.a1) - std::int64_t(c.shape.size());
          std::vector<std::int64_t> list;  // the last axis from the end, the others from 0
          for (std::size_t d = c.a0; d < c.a1; ++d) list.push_back(std::int64_t(d));
          list.push_back(last);
          const kiln::Tensor y =
              kiln::call(e, op, {x.view()}, axes(list).set("correction", correction));
          const auto want = reduce_ref(op, xs, c.shape, c.a0, c.a1, correction);
          const auto got = kiln::test::decode(t, kiln::test::bytes_of(y));
          REQUIRE(got.size() == want.size());
          const double tol = t == DType::f32 ? 2e-4 : t == DType::f16 ? 4e-3 : 2e-2;
          for (std::size_t i = 0; i < got.size(); ++i) {
            CAPTURE(fmt::format("{} {} {} axes {}..{} correction {} [{}]", op, name_of(t),
                                kiln::to_string(c.shape), c.a0, c.a1, correction, i));
            if (std::isnan(want[i]) || std::isinf(want[i]))
              CHECK(std::isnan(got[i]) == std::isnan(want[i]));
            else
              CHECK(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])));
          }
        }
}

TEST_CASE("gpu: reductions over several axes, fused and not, on NCHW and channels_last views" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(49);
  const std::vector<Shape> shapes = {{2, 5, 3, 7}, {1, 33, 1, 9}, {3, 1, 4, 4}, {2, 64, 16, 16}};
  const std::vector<std::vector<std::int64_t>> runs = {{2, 3}, {-3, -2, -1}, {-1, -2}, {0, 1}};
  int graphs = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    for (DType t : {kiln::kFloatDTypes[i % 3]})
      for (bool channels_last : {false, true})
        for (const char* op : {"sum", "mean", "max", "min", "var", "std"})
          for (const auto& run : runs) {
            const Shape& s = shapes[i];  // N, C, H, W
            Graph g;
            // channels_last: the NHWC tensor seen as NCHW (strides H*W*C, 1, W*C, C).
            auto x = channels_last
                         ? kiln::apply("permute", {g.input("x", {s[0], s[2], s[3], s[1]}, t)},
                                       Attrs().set("dims", {0, 3, 1, 2}))
                         : g.input("x", s, t);
            auto b = g.input("b", {s[3]}, DType::f32);  // broadcast along N, C, H
            auto y = kiln::reduce(op, kiln::silu(x * 0.5 + b), run, run.size() == 2);
            g.output(run[0] == 0 ? y : kiln::exp(y * 0.25));  // an epilogue after it
            CAPTURE(g.to_json());
            // N and C of a channels_last view do not lie as one run: refused, not miscomputed.
            if (channels_last && run[0] == 0 && s[0] > 1 && s[1] > 1) {
              CHECK_THROWS_WITH(kiln::Plan(g).compile(e),
                                doctest::Contains("do not lie as one run"));
              CHECK_THROWS_AS(kiln::Plan(g).compile(e), kiln::Error);
              continue;
            }
            for (bool unfused : {false, true})
              for (const auto& f : kiln::test::check_on_gpu(e, g, rng, unfused)) FAIL_CHECK(f);
            ++graphs;
          }
  MESSAGE(fmt::format("{} graphs over several axes", graphs));
}
