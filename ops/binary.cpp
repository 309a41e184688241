// Binary ops (arithmetic, NumPy broadcasting) and comparisons (result bool).
#include <cmath>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

#define KILN_REF(expr) [](double a, double b, double) { return double(expr); }

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

}  // namespace

std::vector<OpDef> binary_ops() {
  const Domain any{-4, 4};
  const Domain nonzero{0.25, 4};   // div: keep the divisor away from 0
  const Domain positive{0.25, 2};  // pow: positive base, moderate results
  return {
      {"add", {"a", "b"}, "kiln::op::Add", Rule::arithmetic, any, KILN_REF(a + b)},
      {"sub", {"a", "b"}, "kiln::op::Sub", Rule::arithmetic, any, KILN_REF(a - b)},
      {"mul", {"a", "b"}, "kiln::op::Mul", Rule::arithmetic, any, KILN_REF(a * b)},
      {"div", {"a", "b"}, "kiln::op::Div", Rule::arithmetic, nonzero, KILN_REF(a / b)},
      {"pow", {"a", "b"}, "kiln::op::Pow", Rule::arithmetic, positive, KILN_REF(std::pow(a, b))},
      {"maximum", {"a", "b"}, "kiln::op::Maximum", Rule::arithmetic, any, KILN_REF(nan_max(a, b))},
      {"minimum", {"a", "b"}, "kiln::op::Minimum", Rule::arithmetic, any, KILN_REF(nan_min(a, b))},
      {"eq", {"a", "b"}, "kiln::op::Eq", Rule::compare, any, KILN_REF(a == b)},
      {"ne", {"a", "b"}, "kiln::op::Ne", Rule::compare, any, KILN_REF(a != b)},
      {"lt", {"a", "b"}, "kiln::op::Lt", Rule::compare, any, KILN_REF(a < b)},
      {"le", {"a", "b"}, "kiln::op::Le", Rule::compare, any, KILN_REF(a <= b)},
      {"gt", {"a", "b"}, "kiln::op::Gt", Rule::compare, any, KILN_REF(a > b)},
      {"ge", {"a", "b"}, "kiln::op::Ge", Rule::compare, any, KILN_REF(a >= b)},
      {"fill", {"x", "value"}, "kiln::op::Fill", Rule::arithmetic, any,
       [](double, double b, double) { return b; }},
  };
}

}  // namespace kiln::ops
