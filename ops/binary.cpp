// Binary ops (arithmetic, NumPy broadcasting) and comparisons (result bool).
#include <cmath>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

#define KILN_REF(expr) [](double a, double b, double) { return double(expr); }

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

OpDef binary(std::string_view name, std::string_view functor, Rule rule, Domain domain,
             double (*reference)(double, double, double), std::string_view doc) {
  OpDef d{name, {"a", "b"}, functor, rule, domain, reference};
  d.doc = doc;
  return d;
}

// `d`, taking integer operands too; `doc` says what it does on them, `int_reference` how where
// it differs from the float reference.
OpDef on_integers(OpDef d, std::string_view doc,
                  double (*int_reference)(double, double, double) = nullptr) {
  d.integers = true;
  d.doc = doc;
  d.int_reference = int_reference;
  return d;
}

// a - floor(a / b) b, as torch.remainder computes it (fmod, then the divisor's sign).
double remainder(double a, double b) {
  const double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

OpDef fill(Domain domain) {
  OpDef d{"fill",           {"x", "value"}, "kiln::op::Fill",
          Rule::arithmetic, domain,         [](double, double b, double) { return b; }};
  d.doc = "value, in the shape broadcasting gives x and value (x's data is not read).";
  return d;
}

}  // namespace

std::vector<OpDef> binary_ops() {
  const Domain any{-4, 4};
  const Domain nonzero{0.25, 4};   // div: keep the divisor away from 0
  const Domain positive{0.25, 2};  // pow: positive base, moderate results
  const Rule arith = Rule::arithmetic, cmp = Rule::compare;
  return {
      on_integers(binary("add", "kiln::op::Add", arith, any, KILN_REF(a + b), ""),
                  "a + b (integers wrap, two's complement)."),
      on_integers(binary("sub", "kiln::op::Sub", arith, any, KILN_REF(a - b), ""),
                  "a - b (integers wrap, two's complement)."),
      on_integers(binary("mul", "kiln::op::Mul", arith, any, KILN_REF(a * b), ""),
                  "a b (integers wrap, two's complement)."),
      on_integers(binary("div", "kiln::op::Div", arith, nonzero, KILN_REF(a / b), ""),
                  "a / b; on integers floor(a / b) (torch's floor_divide), 0 where b is 0.",
                  KILN_REF(b == 0 ? 0.0 : std::floor(a / b))),
      on_integers(
          binary("remainder", "kiln::op::Remainder", arith, nonzero, KILN_REF(remainder(a, b)), ""),
          "a - floor(a / b) b, with the sign of b (torch.remainder, Python's %); on "
          "integers 0 where b is 0.",
          KILN_REF(b == 0 ? 0.0 : remainder(a, b))),
      binary("pow", "kiln::op::Pow", arith, positive, KILN_REF(std::pow(a, b)), "a^b."),
      on_integers(binary("maximum", "kiln::op::Maximum", arith, any, KILN_REF(nan_max(a, b)), ""),
                  "The larger of a and b; NaN if either is."),
      on_integers(binary("minimum", "kiln::op::Minimum", arith, any, KILN_REF(nan_min(a, b)), ""),
                  "The smaller of a and b; NaN if either is."),
      binary("eq", "kiln::op::Eq", cmp, any, KILN_REF(a == b), "a == b."),
      binary("ne", "kiln::op::Ne", cmp, any, KILN_REF(a != b), "a != b."),
      binary("lt", "kiln::op::Lt", cmp, any, KILN_REF(a < b), "a < b."),
      binary("le", "kiln::op::Le", cmp, any, KILN_REF(a <= b), "a <= b."),
      binary("gt", "kiln::op::Gt", cmp, any, KILN_REF(a > b), "a > b."),
      binary("ge", "kiln::op::Ge", cmp, any, KILN_REF(a >= b), "a >= b."),
      fill(any),
  };
}

}  // namespace kiln::ops
