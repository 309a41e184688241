// Unary ops: f(x) on floats.
#include <cmath>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

#define KILN_REF(expr) [](double x, double, double) { return double(expr); }

}  // namespace

std::vector<OpDef> unary_ops() {
  const Domain any{-4, 4};
  const Domain positive{0.05, 4};
  return {
      {"neg", {"x"}, "kiln::op::Neg", Rule::arithmetic, any, KILN_REF(-x)},
      {"abs", {"x"}, "kiln::op::Abs", Rule::arithmetic, any, KILN_REF(std::fabs(x))},
      {"exp", {"x"}, "kiln::op::Exp", Rule::arithmetic, any, KILN_REF(std::exp(x))},
      {"log", {"x"}, "kiln::op::Log", Rule::arithmetic, positive, KILN_REF(std::log(x))},
      {"sqrt", {"x"}, "kiln::op::Sqrt", Rule::arithmetic, positive, KILN_REF(std::sqrt(x))},
      {"rsqrt", {"x"}, "kiln::op::Rsqrt", Rule::arithmetic, positive, KILN_REF(1.0 / std::sqrt(x))},
      {"sin", {"x"}, "kiln::op::Sin", Rule::arithmetic, any, KILN_REF(std::sin(x))},
      {"cos", {"x"}, "kiln::op::Cos", Rule::arithmetic, any, KILN_REF(std::cos(x))},
      {"tanh", {"x"}, "kiln::op::Tanh", Rule::arithmetic, any, KILN_REF(std::tanh(x))},
      {"sigmoid",
       {"x"},
       "kiln::op::Sigmoid",
       Rule::arithmetic,
       any,
       KILN_REF(1.0 / (1.0 + std::exp(-x)))},
      {"relu", {"x"}, "kiln::op::Relu", Rule::arithmetic, any, KILN_REF(x < 0 ? 0.0 : x)},
      {"gelu", {"x"}, "kiln::op::Gelu", Rule::arithmetic, any, KILN_REF(gelu(x))},
      {"gelu_tanh", {"x"}, "kiln::op::GeluTanh", Rule::arithmetic, any, KILN_REF(gelu_tanh(x))},
      {"silu", {"x"}, "kiln::op::Silu", Rule::arithmetic, any, KILN_REF(x / (1.0 + std::exp(-x)))},
      {"softplus",
       {"x"},
       "kiln::op::Softplus",
       Rule::arithmetic,
       any,
       KILN_REF(x > 20 ? x : std::log1p(std::exp(x)))},
  };
}

}  // namespace kiln::ops
