// codegen's split of an epilogue's per-column math (split_columns): the columns' body and the
// element's, composed, compute what the whole body does (checked by an evaluator of this test's
// own), and the split is refused where it would stage more values than the inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <kiln/error.hpp>
#include <kiln/graph.hpp>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/codegen/codegen.hpp"
#include "engine/exec/plan_specs.hpp"
#include "tests/engine/families/conv/conv_cases.hpp"

using kiln::DType;
using kiln::codegen::Body;
using kiln::codegen::Ref;
using kiln::codegen::Step;

namespace {

// `b` on inputs `x`, scalars `s` and the product `row`, in double: its results.
std::vector<double> run(const Body& b, const std::vector<double>& x, const std::vector<double>& s,
                        double row) {
  static const std::map<std::string, std::function<double(double, double)>> f = {
      {"kiln::op::Add", [](double a, double c) { return a + c; }},
      {"kiln::op::Sub", [](double a, double c) { return a - c; }},
      {"kiln::op::Mul", [](double a, double c) { return a * c; }},
      {"kiln::op::Rsqrt", [](double a, double) { return 1.0 / std::sqrt(a); }},
      {"kiln::op::Silu", [](double a, double) { return a / (1.0 + std::exp(-a)); }},
  };
  REQUIRE(x.size() == b.inputs.size());
  std::vector<double> t;
  const auto value = [&](const Ref& r) {
    switch (r.kind) {
      case Ref::Kind::input:
        return x.at(std::size_t(r.index));
      case Ref::Kind::scalar:
        return s.at(std::size_t(r.index));
      case Ref::Kind::step:
        return t.at(std::size_t(r.index));
      default:
        return row;
    }
  };
  for (const Step& st : b.steps)
    t.push_back(f.at(st.functor)(value(st.args.at(0)), st.args.size() > 1 ? value(st.args[1]) : 0));
  std::vector<double> y;
  for (const Ref& r : b.results) y.push_back(value(r));
  return y;
}

Ref in(int i) { return {Ref::Kind::input, i}; }
Ref step(int i) { return {Ref::Kind::step, i}; }
const Ref kRow = {Ref::Kind::row, 0};
const Ref kEps = {Ref::Kind::scalar, 0};
Step op(const char* f, std::vector<Ref> args) { return {f, std::move(args), false, DType::f32}; }

// What batch_norm then silu make: inputs mean, var, weight, bias; the product as the row.
Body batch_norm_silu() {
  Body b;
  b.inputs = {DType::f32, DType::f32, DType::f16, DType::f16};
  b.outputs = {DType::f16};
  b.scalars = 1;
  b.steps = {op("kiln::op::Add", {in(1), kEps}),      op("kiln::op::Rsqrt", {step(0)}),
             op("kiln::op::Mul", {step(1), in(2)}),   op("kiln::op::Mul", {in(0), step(2)}),
             op("kiln::op::Sub", {in(3), step(3)}),   op("kiln::op::Mul", {kRow, step(2)}),
             op("kiln::op::Add", {step(5), step(4)}), op("kiln::op::Silu", {step(6)})};
  b.results = {step(7)};
  return b;
}

// The split's columns then element on the same values, against the whole body.
void check_composes(const Body& b, std::mt19937_64& rng) {
  const auto split = kiln::codegen::split_columns(b);
  REQUIRE(split.has_value());
  std::uniform_real_distribution<double> u(0.1, 3.0);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> x(b.inputs.size()), s(std::size_t(b.scalars));
    for (double& v : x) v = u(rng);
    for (double& v : s) v = u(rng);
    const double row = u(rng) - 1.5;
    const std::vector<double> staged = run(split->columns, x, s, 0.0);
    const std::vector<double> want = run(b, x, s, row), got = run(split->element, staged, s, row);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("codegen: a batch norm's scale and shift split off as per-column math") {
  const Body b = batch_norm_silu();
  const auto split = kiln::codegen::split_columns(b);
  REQUIRE(split.has_value());
  CHECK(split->columns.steps.size() == 5);    // var + eps, rsqrt, * weight, mean * scale, bias -
  CHECK(split->columns.outputs.size() == 2);  // the scale and the shift
  CHECK(split->element.inputs.size() == 2);
  CHECK(split->element.steps.size() == 3);  // x * scale, + shift, silu
  CHECK(split->element.outputs == b.outputs);
  CHECK(kiln::codegen::column_operands(b) == 2);
  auto rng = std::mt19937_64(7);
  check_composes(b, rng);

  const std::string src = kiln::codegen::render_split_body(b, "kiln_epilogue");
  CHECK(src.find("using Inputs = kiln::Types<float, float, kiln::half, kiln::half>;") !=
        std::string::npos);
  CHECK(src.find("  struct Columns {") != std::string::npos);
  CHECK(src.find("static constexpr int staged = 2;") != std::string::npos);
  // The element's apply (after the nested struct): the product after its two staged values.
  const std::string element = src.substr(src.find("static constexpr int staged = 2;"));
  CHECK(element.find("kiln::op::Mul::apply(x[2], x[0])") != std::string::npos);
  CHECK(element.find("x[3]") == std::string::npos);
}

TEST_CASE("codegen: inputs read raw and computed alike are staged once each, in order of use") {
  // (x - mean) * rsqrt(var * var + 0.5) * gamma + beta: mean, the scale, gamma, beta staged.
  Body b;
  b.inputs = {DType::f32, DType::f32, DType::f32, DType::f32};
  b.outputs = {DType::bf16, DType::f32};
  b.scalars = 1;
  b.steps = {op("kiln::op::Mul", {in(1), in(1)}),     op("kiln::op::Add", {step(0), kEps}),
             op("kiln::op::Rsqrt", {step(1)}),        op("kiln::op::Sub", {kRow, in(0)}),
             op("kiln::op::Mul", {step(3), step(2)}), op("kiln::op::Mul", {step(4), in(2)}),
             op("kiln::op::Add", {step(5), in(3)})};
  b.results = {step(6), step(2)};  // the second output depends on the columns alone
  const auto split = kiln::codegen::split_columns(b);
  REQUIRE(split.has_value());
  CHECK(split->columns.steps.size() == 3);
  CHECK(split->columns.outputs.size() == 4);
  CHECK(split->element.results.at(1).kind == Ref::Kind::input);
  auto rng = std::mt19937_64(11);
  check_composes(b, rng);
}

TEST_CASE("codegen: no split without per-column steps, nor where it stages more than the inputs") {
  Body plain;  // x * scale + shift, the inputs as they are
  plain.inputs = {DType::f32, DType::f32};
  plain.outputs = {DType::f16};
  plain.steps = {op("kiln::op::Mul", {kRow, in(0)}), op("kiln::op::Add", {step(0), in(1)})};
  plain.results = {step(1)};
  CHECK_FALSE(kiln::codegen::split_columns(plain).has_value());
  CHECK(kiln::codegen::column_operands(plain) == 2);
  CHECK(kiln::codegen::render_split_body(plain, "e") == kiln::codegen::render_body(plain, "e"));

  Body more;  // x * a + rsqrt(a): a and rsqrt(a) would be staged, for one input
  more.inputs = {DType::f32};
  more.outputs = {DType::f16};
  more.steps = {op("kiln::op::Rsqrt", {in(0)}), op("kiln::op::Mul", {kRow, in(0)}),
                op("kiln::op::Add", {step(1), step(0)})};
  more.results = {step(2)};
  CHECK_FALSE(kiln::codegen::split_columns(more).has_value());
  CHECK(kiln::codegen::column_operands(more) == 1);

  Body none;  // no inputs
  none.outputs = {DType::f16};
  none.steps = {op("kiln::op::Silu", {kRow})};
  none.results = {step(0)};
  CHECK_FALSE(kiln::codegen::split_columns(none).has_value());

  Body bad = batch_norm_silu();  // a step reading a later one: no split, render_body's error
  bad.steps[1].args[0] = step(5);
  CHECK_FALSE(kiln::codegen::split_columns(bad).has_value());
  CHECK_THROWS_AS(kiln::codegen::render_split_body(bad, "e"), kiln::ArgumentError);
}

TEST_CASE("codegen: the wgmma blocks that stage a batch norm's statistics render its split") {
  // A convolution stored by TMA (Store, Columns: the expression's last two flags) and a linear
  // taking the staged walk (Columns alone), as the GPU cases run them.
  const auto spec_of = [](const kiln::Graph& g, const char* stem) {
    for (const auto& s : kiln::plan_specs(g, true, {}, nullptr, "sm_90a"))
      if (s.name.rfind(stem, 0) == 0) return s;
    FAIL("no kernel " << stem);
    return kiln::KernelSpec{};
  };
  const kiln::test::ConvCase conv{5, 16, 64, 64, 160, 3, 3, {1}, {1}, {1}, 1, true, false, 4};
  const kiln::KernelSpec c = spec_of(kiln::test::conv_graph(conv, DType::f16), "conv2d");
  CHECK(c.source.find("struct Columns") != std::string::npos);
  CHECK(c.source.find("static constexpr int staged = 2;") != std::string::npos);
  CHECK(c.expression.substr(c.expression.size() - 11) == "true, true>");

  kiln::Graph g;
  const std::int64_t N = 80;
  const auto col = [&g, N](const char* name) { return g.input(name, {N}, DType::f16); };
  const auto h = kiln::apply(
      "linear", {g.input("x", {96, 72}, DType::f16), g.input("w", {N, 72}, DType::f16)});
  const auto var = col("var");
  g.output(
      kiln::silu((h - col("mean")) * (kiln::rsqrt(var * var + 0.5) * col("gamma")) + col("beta")),
      "y");
  const kiln::KernelSpec l = spec_of(g, "linear");
  CHECK(l.source.find("static constexpr int staged = 3;") !=
        std::string::npos);  // mean, scale, beta
  CHECK(l.expression.substr(l.expression.size() - 12) == "false, true>");
}
