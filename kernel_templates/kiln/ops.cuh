#pragma once
// Elementwise ops as functor structs: `arity` and `apply` on f32 values. A fused expression
// composes them as template arguments. NaN semantics follow PyTorch: NaN in, NaN out.

namespace kiln {
namespace op {

#define KILN_UNARY(Name, expr)                                              \
  struct Name {                                                             \
    static constexpr int arity = 1;                                         \
    __device__ __forceinline__ static float apply(float x) { return expr; } \
  };
#define KILN_BINARY(Name, expr)                                                      \
  struct Name {                                                                      \
    static constexpr int arity = 2;                                                  \
    __device__ __forceinline__ static float apply(float a, float b) { return expr; } \
  };

KILN_UNARY(Identity, x)
KILN_UNARY(Neg, -x)
KILN_UNARY(Abs, fabsf(x))
KILN_UNARY(Exp, expf(x))
KILN_UNARY(Log, logf(x))
KILN_UNARY(Sqrt, sqrtf(x))
KILN_UNARY(Rsqrt, 1.0f / sqrtf(x))
KILN_UNARY(Sin, sinf(x))
KILN_UNARY(Cos, cosf(x))
KILN_UNARY(Tanh, tanhf(x))
KILN_UNARY(Sigmoid, 1.0f / (1.0f + expf(-x)))
KILN_UNARY(Relu, x < 0.0f ? 0.0f : x)
KILN_UNARY(Gelu, 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)))
KILN_UNARY(GeluTanh, 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))))
KILN_UNARY(Silu, x / (1.0f + expf(-x)))
KILN_UNARY(Softplus, x > 20.0f ? x : log1pf(expf(x)))

KILN_BINARY(Add, a + b)
KILN_BINARY(Sub, a - b)
KILN_BINARY(Mul, a* b)
KILN_BINARY(Div, a / b)
KILN_BINARY(Pow, powf(a, b))
KILN_BINARY(Maximum, (a != a || b != b) ? a + b : fmaxf(a, b))
KILN_BINARY(Minimum, (a != a || b != b) ? a + b : fminf(a, b))
KILN_BINARY(Eq, a == b ? 1.0f : 0.0f)
KILN_BINARY(Ne, a != b ? 1.0f : 0.0f)
KILN_BINARY(Lt, a < b ? 1.0f : 0.0f)
KILN_BINARY(Le, a <= b ? 1.0f : 0.0f)
KILN_BINARY(Gt, a > b ? 1.0f : 0.0f)
KILN_BINARY(Ge, a >= b ? 1.0f : 0.0f)
KILN_BINARY(Fill, b)  // a's value is never read, so its load compiles away: a pure store

#undef KILN_UNARY
#undef KILN_BINARY

/// where(cond, a, b): a where cond is nonzero (NaN counts as nonzero).
struct Where {
  static constexpr int arity = 3;
  __device__ __forceinline__ static float apply(float c, float a, float b) {
    return c != 0.0f ? a : b;
  }
};

/// clamp(x, lo, hi); an absent bound arrives as an infinity. NaN passes through.
struct Clamp {
  static constexpr int arity = 3;
  __device__ __forceinline__ static float apply(float x, float lo, float hi) {
    return x < lo ? lo : (x > hi ? hi : x);
  }
};

}  // namespace op
}  // namespace kiln
