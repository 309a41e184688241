// Row ops where an axis has extent 1: every row op x dtype x a length-1 axis at each position x
// the axis reduced at each position x small extents around it, fused (behind a prologue, before
// an epilogue) and unfused, against the fp64 reference on poisoned outputs; and NaN and
// infinities through max, min and softmax as PyTorch propagates them. A sample NVRTC-compiles
// in the CPU suite.
#include <fmt/format.h>

#include <cmath>

#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/exec/precompile.hpp"
#include "ops/op.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

namespace {

using kiln::DType;

struct SweepCase {
  std::string label;
  kiln::Graph graph;
};

// op(x * 1.5 + 0.25) with an epilogue (exp) after the ops that write rows; x of `shape`.
kiln::Graph row_graph(const std::string& op, DType t, const kiln::Shape& shape, int axis) {
  kiln::Graph g;
  auto x = g.input("x", shape, t);
  kiln::Attrs a;
  const bool norm = op == "layer_norm" || op == "rms_norm";
  if (!norm) a.set("axis", axis);
  auto y = g.add(op, {x * 1.5 + 0.25}, a, "y");
  g.output(kiln::ops::find_op(op).reduces ? y : kiln::exp(y), "out");
  return g;
}

// Rank-3 shapes with a 1 at `one` and the pairs below around it; each axis reduced in turn
// (the norms: the last only).
std::vector<SweepCase> sweep(bool sample) {
  const std::vector<std::pair<int, int>> around = {{2, 2}, {3, 4}, {4, 1}, {1, 3}};
  std::vector<SweepCase> out;
  int n = 0;
  for (const char* op :
       {"sum", "mean", "max", "min", "softmax", "log_softmax", "layer_norm", "rms_norm"})
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (int one = 0; one < 3; ++one)
        for (const auto& [p, q] : around)
          for (int axis = 0; axis < 3; ++axis) {
            const std::string name(op);
            if ((name == "layer_norm" || name == "rms_norm") && axis != 2) continue;
            if (sample && n++ % 23) continue;
            kiln::Shape shape = {p, q};
            shape.insert(shape.begin() + one, 1);
            out.push_back({fmt::format("{} {} {} axis {}", op, kiln::name_of(t),
                                       kiln::to_string(shape), axis),
                           row_graph(op, t, shape, axis)});
          }
  return out;
}

}  // namespace

TEST_CASE(
    "length-1 axes: a sample of the row-op sweep plans and NVRTC-compiles for sm_80 and sm_90a") {
  std::vector<kiln::KernelSpec> specs;
  for (const auto& c : sweep(true))
    for (bool fuse : {true, false})
      for (auto& s : kiln::plan_specs(c.graph, fuse)) specs.push_back(std::move(s));
  REQUIRE(specs.size() >= 40);
  kiln::PrecompileOptions o;
  o.archs = {"sm_80", "sm_90a"};
  o.jobs = 2;
  kiln::cache::KernelCache memory(std::nullopt);
  const auto s = kiln::precompile_specs(specs, o, memory);
  for (const auto& f : s.failures) FAIL_CHECK(f.name << " " << f.arch << ": " << f.error);
  CHECK(s.compiled + s.cached == int(specs.size()) * 2);
}

TEST_CASE(
    "length-1 axes: a reduction over one keeps it between the dims around it (the column "
    "template's R)") {
  // Without R, [2, 2] would coalesce into one dim of 4 whose vector width of 4 makes the column
  // template's inner groups 2 / 4 = 0: nothing written.
  for (DType t : {DType::f32, DType::bf16}) {
    kiln::Graph g;
    g.output(kiln::reduce("min", g.input("x", {2, 1, 2}, t), false, 1));
    const auto spec = kiln::plan_specs(g).front();
    CAPTURE(spec.expression);
    CHECK(spec.expression.find("kiln::Dim<1, 0, 0>") != std::string::npos);     // R, extent 1
    CHECK(spec.expression.find(">>, 2, unsigned int, ") != std::string::npos);  // V = 2 ...
    CHECK(spec.expression.substr(spec.expression.size() - 7) ==
          ", 1, 1>");  // ... R = 1, IG = 1: the 2 of each outer
  }
}

TEST_CASE(
    "gpu: length-1 axes: every row op x dtype x position x extents, fused and unfused, match the "
    "reference" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::EngineOptions eo;
  eo.cache_dir = tmp / "cache";
  kiln::Engine e(eo);
  const auto cases = sweep(false);
  {  // Compiled up front on every core, into the engine's cache: the runs below only load them.
    std::vector<kiln::KernelSpec> specs;
    for (const auto& c : cases)
      for (bool fuse : {true, false})
        for (auto& s : kiln::plan_specs(c.graph, fuse, {}, nullptr, e.arch()))
          specs.push_back(std::move(s));
    kiln::PrecompileOptions o;
    o.archs = {e.arch()};
    kiln::cache::KernelCache c(std::optional<std::string>(tmp / "cache"));
    REQUIRE(kiln::precompile_specs(specs, o, c).failed == 0);
  }
  auto rng = kiln::test::make_rng(101);
  for (const auto& c : cases) {
    CAPTURE(c.label);
    for (const auto& f : kiln::test::check_on_gpu(e, c.graph, rng, true)) FAIL_CHECK(f);
  }
  MESSAGE(cases.size() << " graphs checked fused and unfused");
}

TEST_CASE(
    "gpu: NaN and infinities through max, min, softmax and log_softmax propagate as in PyTorch" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  const double nan = std::nan(""), inf = INFINITY;
  // Rows of 4 (the last axis) and columns of 3 (axis 0) holding: a NaN, +inf, -inf, -inf alone,
  // NaN with inf, all -inf, plain numbers.
  const std::vector<std::vector<double>> rows = {
      {1, nan, 2, 3},      {1, inf, 2, 3},   {1, -inf, 2, 3},  {-inf, -inf, -inf, -inf},
      {nan, inf, -inf, 0}, {inf, inf, 1, 2}, {0.5, -1, 2, 1.5}};
  for (const char* op : {"max", "min", "softmax", "log_softmax"})
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (int axis : {1, 0}) {
        const std::int64_t n = std::int64_t(rows.size());
        const kiln::Shape shape = axis == 1 ? kiln::Shape{n, 4} : kiln::Shape{4, n};
        kiln::Graph g;
        g.output(g.add(op, {g.input("x", shape, t)}, kiln::Attrs().set("axis", axis), "y"));
        std::vector<unsigned char> bytes(std::size_t(4 * n) * kiln::size_of(t));
        for (std::int64_t r = 0; r < n; ++r)
          for (std::int64_t i = 0; i < 4; ++i) {
            const std::int64_t at = axis == 1 ? r * 4 + i : i * n + r;
            kiln::store_element(t, rows[std::size_t(r)][std::size_t(i)],
                                bytes.data() + std::size_t(at) * kiln::size_of(t));
          }
        CAPTURE(op);
        CAPTURE(kiln::name_of(t));
        CAPTURE(axis);
        for (const auto& f : kiln::test::check_inputs_on_gpu(e, g, {{"x", bytes}}, true))
          FAIL_CHECK(f);
      }
}
