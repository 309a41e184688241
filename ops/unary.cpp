// Unary ops: f(x) on floats (neg and abs on integers too).
#include <cmath>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

#define KILN_REF(expr) [](double x, double, double) { return double(expr); }

OpDef unary(std::string_view name, std::string_view functor, Domain domain,
            double (*reference)(double, double, double), std::string_view doc) {
  OpDef d{name, {"x"}, functor, Rule::arithmetic, domain, reference};
  d.doc = doc;
  return d;
}

OpDef on_integers(OpDef d, std::string_view doc) {
  d.integers = true;
  d.doc = doc;
  return d;
}

}  // namespace

std::vector<OpDef> unary_ops() {
  const Domain any{-4, 4};
  const Domain positive{0.05, 4};
  return {
      on_integers(unary("neg", "kiln::op::Neg", any, KILN_REF(-x), ""),
                  "-x, element by element (integers wrap: the minimum stays itself)."),
      on_integers(unary("abs", "kiln::op::Abs", any, KILN_REF(std::fabs(x)), ""),
                  "|x|, element by element (integers wrap: the minimum stays itself)."),
      unary("exp", "kiln::op::Exp", any, KILN_REF(std::exp(x)), "e^x, element by element."),
      unary("log", "kiln::op::Log", positive, KILN_REF(std::log(x)),
            "The natural logarithm of x, element by element."),
      unary("sqrt", "kiln::op::Sqrt", positive, KILN_REF(std::sqrt(x)),
            "The square root of x, element by element."),
      unary("rsqrt", "kiln::op::Rsqrt", positive, KILN_REF(1.0 / std::sqrt(x)),
            "1 / sqrt(x), element by element."),
      unary("sin", "kiln::op::Sin", any, KILN_REF(std::sin(x)), "The sine of x (radians)."),
      unary("cos", "kiln::op::Cos", any, KILN_REF(std::cos(x)), "The cosine of x (radians)."),
      unary("tanh", "kiln::op::Tanh", any, KILN_REF(std::tanh(x)), "The hyperbolic tangent of x."),
      unary("sigmoid", "kiln::op::Sigmoid", any, KILN_REF(1.0 / (1.0 + std::exp(-x))),
            "1 / (1 + e^-x), element by element."),
      unary("relu", "kiln::op::Relu", any, KILN_REF(x < 0 ? 0.0 : x), "max(x, 0)."),
      unary("gelu", "kiln::op::Gelu", any, KILN_REF(gelu(x)),
            "x Φ(x), Φ the standard normal CDF computed with erf (torch's gelu)."),
      unary("gelu_tanh", "kiln::op::GeluTanh", any, KILN_REF(gelu_tanh(x)),
            "The tanh approximation of gelu (torch's gelu(approximate='tanh'))."),
      unary("silu", "kiln::op::Silu", any, KILN_REF(x / (1.0 + std::exp(-x))),
            "x sigmoid(x) (swish)."),
      unary("softplus", "kiln::op::Softplus", any, KILN_REF(x > 20 ? x : std::log1p(std::exp(x))),
            "log(1 + e^x); x itself above 20, where the two agree in float."),
  };
}

}  // namespace kiln::ops
