// A custom op's expression (ops/expr.hpp): its grammar, its fp64 meaning, its refusals (nothing
// but the expression reaches kernel text, and no input crashes), and its CUDA rendering
// NVRTC-compiled for sm_80 and sm_90a.
#include "ops/expr.hpp"

#include <fmt/format.h>

#include <cmath>
#include <kiln/error.hpp>
#include <string>
#include <vector>

#include "engine/codegen/codegen.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/families/elementwise/elementwise.hpp"
#include "tests/support.hpp"

using kiln::ops::Expr;

namespace {

double eval(const std::string& text, std::vector<double> x,
            std::vector<std::string> names = {"x"}) {
  return Expr::parse("t", text, names).evaluate(x.data());
}

}  // namespace

TEST_CASE("a custom op's expression: precedence, operators and functions in fp64") {
  const double x = 0.7;
  CHECK(eval("x * tanhf(log1pf(expf(x)))", {x}) ==
        doctest::Approx(x * std::tanh(std::log1p(std::exp(x)))));
  CHECK(eval("1 - 2 - 3", {0}) == -4);
  CHECK(eval("2 * 3 + 4 / 8", {0}) == 6.5);
  CHECK(eval("-x * x", {3}) == -9);
  CHECK(eval("--x", {3}) == 3);
  CHECK(eval("+x", {3}) == 3);
  CHECK(eval("x > 0 ? x : 0.01 * x", {-2}) == doctest::Approx(-0.02));
  CHECK(eval("x > 0 ? x : 0.01 * x", {2}) == 2);
  CHECK(eval("a < b ? 1 : b < a ? 2 : 3", {1, 1}, {"a", "b"}) == 3);  // right-associative
  CHECK(eval("!(x > 1) && x < 5", {0}) == 1);
  CHECK(eval("x == 2 || x != x", {2}) == 1);
  CHECK(eval("(x >= 2) + (x <= 2)", {2}) == 2);
  CHECK(eval("fmaf(a, b, c) + powf(a, 2) + fminf(b, c)", {2, 3, 4}, {"a", "b", "c"}) == 10 + 4 + 3);
  CHECK(eval("1.5e2f + .5 + 2.", {0}) == 152.5);
  CHECK(std::isnan(eval("x / x", {0})));
  for (const kiln::ops::ExprFunction& f : kiln::ops::expr_functions()) {
    CAPTURE(f.name);
    std::vector<std::string> args(std::size_t(f.arity), "x");
    const double a[3] = {0.3, 0.3, 0.3};
    const double got = eval(fmt::format("{}({})", f.name, fmt::join(args, ", ")), {0.3}),
                 want = f.eval(a);
    CHECK((got == want || (std::isnan(got) && std::isnan(want))));
  }
}

TEST_CASE("a custom op's expression refuses anything but the grammar, naming the op") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"x; }", "';' is not allowed"},
      {"x } __global__ void f() { ", "'}' is not allowed"},
      {"#include <x>", "'#' is not allowed"},
      {"x // c", "unexpected '/'"},
      {"x /* c */", "unexpected '*'"},
      {"x\n+1", "a line break"},
      {"__syncthreads()", "is not a function"},
      {"asm(\"trap;\")", "'\"' is not allowed"},
      {"system(x)", "'system' is not a function"},
      {"x[0]", "'[' is not allowed"},
      {"\"x\"", "'\"' is not allowed"},
      {"y", "'y' is neither an operand (x) nor a function"},
      {"x x", "unexpected 'x'"},
      {"", "unexpected 'end of the expression'"},
      {"(x", "expected ')'"},
      {"x ?", "unexpected 'end"},
      {"x ? 1", "expected ':'"},
      {"expf(x, x)", "expf takes 1 argument, not 2"},
      {"powf(x)", "powf takes 2 arguments, not 1"},
      {"1x", "'1x' is not a number"},
      {"0x1F", "'0x' is not a number"},
      {"1.2.3", "'1.2.3' is not a number"},
      {"1e999", "not a finite f32 number"},
      {"x = 1", "'=' is not allowed"},
      {"x & 1", "'&' is not allowed"},
      {"x % 2", "'%' is not allowed"},
      {"expf", "'expf' is neither an operand"},
      {std::string(100, '(') + "x" + std::string(100, ')'), "nested deeper than 64 levels"},
      {std::string(5000, '-') + "x", "5001 characters"},
  };
  for (const auto& [text, why] : bad) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(Expr::parse("mish", text, {"x"}), doctest::Contains(why.c_str()),
                         kiln::GraphError);
    CHECK_THROWS_WITH_AS(Expr::parse("mish", text, {"x"}), doctest::Contains("op 'mish': expr:"),
                         kiln::GraphError);
  }
  // Every byte after an operand, and a deep nest of 100000: a GraphError or a parse, nothing else.
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    try {
      Expr::parse("t", std::string("x") + char(c) + "1", {"x"});
    } catch (const kiln::GraphError&) {
    }
  }
  CHECK_THROWS_AS(Expr::parse("t", std::string(4000, '('), {"x"}), kiln::GraphError);
  CHECK_THROWS_AS(Expr::parse("t", std::string(4000, '-') + "x", {"x"}), kiln::GraphError);
}

TEST_CASE(
    "a custom op's expression renders as a functor that NVRTC compiles for sm_80 and sm_90a") {
  std::vector<std::string> terms = {"x * tanhf(log1pf(expf(x)))", "(x > 0 ? x : -x) + !(x < y)",
                                    "(x && y) + (x || y) + 1e-3 - 2"};
  for (const kiln::ops::ExprFunction& f : kiln::ops::expr_functions()) {
    std::vector<std::string> args(std::size_t(f.arity), "y");
    terms.push_back(fmt::format("{}({})", f.name, fmt::join(args, ", ")));
  }
  CHECK(
      kiln::codegen::render_functor("kiln_op_t", Expr::parse("t", "x > 0 ? x : -x * 2", {"x"})) ==
      "struct kiln_op_t {\n  static constexpr int arity = 1;\n  __device__ __forceinline__ static "
      "float apply(float x0) { return ((x0 > 0.0f ? 1.0f : 0.0f) != 0.0f ? x0 : ((-x0) * "
      "2.0f)); }\n};\n");
  const Expr e = Expr::parse("every", fmt::format("{}", fmt::join(terms, " + ")), {"x", "y"});
  const std::string functor = kiln::codegen::render_functor("kiln_op_every", e);
  CHECK(functor.find("static float apply(float x0, float x1)") != std::string::npos);
  CHECK(functor.find("static constexpr int arity = 2;") != std::string::npos);
  kiln::codegen::Body body;
  body.inputs = {kiln::DType::f32, kiln::DType::bf16};
  body.outputs = {kiln::DType::bf16};
  body.steps = {{"kiln_op_every",
                 {{kiln::codegen::Ref::Kind::input, 0}, {kiln::codegen::Ref::Kind::input, 1}}}};
  body.results = {{kiln::codegen::Ref::Kind::step, 0}};
  kiln::KernelLaunch L = kiln::specialize_elementwise(
      body, "every", {kiln::test::desc({1000}, kiln::DType::bf16)},
      {kiln::test::desc({1000}, kiln::DType::f32), kiln::test::desc({1000}, kiln::DType::bf16)},
      {});
  L.spec.source.insert(L.spec.source.find("struct kiln_body"), functor + "\n");
  for (const char* arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    const kiln::CompiledKernel k = kiln::compiler::compile(L.spec, arch);
    CHECK(!k.image.empty());
  }
}
