#pragma once
// Elementwise ops as functor structs: `arity` and `apply` on f32 values (and, for the ops that
// take integers, on int and long long: kiln/integer.cuh). A fused expression composes them as
// template arguments. NaN semantics follow PyTorch: NaN in, NaN out.

#include <kiln/integer.cuh>

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
// An op on floats and on integers (iexpr, on int or long long a and b).
#define KILN_UNARY_INT(Name, expr, iexpr)                                            \
  struct Name {                                                                      \
    static constexpr int arity = 1;                                                  \
    __device__ __forceinline__ static float apply(float x) { return expr; }          \
    __device__ __forceinline__ static int apply(int x) { return iexpr; }             \
    __device__ __forceinline__ static long long apply(long long x) { return iexpr; } \
  };
#define KILN_BINARY_INT(Name, expr, iexpr)                                                        \
  struct Name {                                                                                   \
    static constexpr int arity = 2;                                                               \
    __device__ __forceinline__ static float apply(float a, float b) { return expr; }              \
    __device__ __forceinline__ static int apply(int a, int b) { return iexpr; }                   \
    __device__ __forceinline__ static long long apply(long long a, long long b) { return iexpr; } \
  };
// A comparison: 1 or 0 (bool's compute value) for operands of one compute type.
#define KILN_COMPARE(Name, op)                                \
  struct Name {                                               \
    static constexpr int arity = 2;                           \
    template <class T>                                        \
    __device__ __forceinline__ static float apply(T a, T b) { \
      return a op b ? 1.0f : 0.0f;                            \
    }                                                         \
  };

/// x as it is, of any compute type.
struct Identity {
  static constexpr int arity = 1;
  template <class T>
  __device__ __forceinline__ static T apply(T x) {
    return x;
  }
};
KILN_UNARY_INT(Neg, -x, integer::neg(x))
KILN_UNARY_INT(Abs, fabsf(x), x < 0 ? integer::neg(x) : x)
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

/// The same ops, exp, log, rsqrt, sigmoid and silu through the hardware's approximations
/// (errors near 2^-21 relative, denormals flushed): what a product's or convolution's epilogue
/// whose outputs are all 16-bit computes (engine/families/gemm/gemm_templates.cpp), since those
/// outputs round at 2^-11 or coarser and the epilogue's math runs while the tensor cores wait.
/// Every other op is op's own (found through the using-directive). exp and rsqrt are the
/// approximations' .ftz forms: __expf and rsqrtf keep denormals, which costs a compare and two
/// predicated scalings around each MUFU (3 of a SiLU's 8 instructions an element).
namespace fast {
using namespace ::kiln::op;
__device__ __forceinline__ float ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float exp_ftz(float x) { return ex2_ftz(x * 1.44269504088896341f); }
__device__ __forceinline__ float rsqrt_ftz(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
KILN_UNARY(Exp, exp_ftz(x))
KILN_UNARY(Log, __logf(x))
KILN_UNARY(Rsqrt, rsqrt_ftz(x))
KILN_UNARY(Sigmoid, __fdividef(1.0f, 1.0f + exp_ftz(-x)))
KILN_UNARY(Silu, __fdividef(x, 1.0f + exp_ftz(-x)))
}  // namespace fast

KILN_BINARY_INT(Add, a + b, integer::add(a, b))
KILN_BINARY_INT(Sub, a - b, integer::sub(a, b))
KILN_BINARY_INT(Mul, a* b, integer::mul(a, b))
KILN_BINARY_INT(Div, a / b, integer::floordiv(a, b))  // integers: torch's floor_divide
KILN_BINARY(Pow, powf(a, b))
KILN_BINARY_INT(Maximum, (a != a || b != b) ? a + b : fmaxf(a, b), a < b ? b : a)
KILN_BINARY_INT(Minimum, (a != a || b != b) ? a + b : fminf(a, b), b < a ? b : a)
// a - floor(a / b) b, the sign of b (torch.remainder; integers: Python's %).
KILN_BINARY_INT(Remainder,
                fmodf(a, b) != 0.0f && ((fmodf(a, b) < 0.0f) != (b < 0.0f)) ? fmodf(a, b) + b
                                                                            : fmodf(a, b),
                integer::remainder(a, b))
KILN_COMPARE(Eq, ==)
KILN_COMPARE(Ne, !=)
KILN_COMPARE(Lt, <)
KILN_COMPARE(Le, <=)
KILN_COMPARE(Gt, >)
KILN_COMPARE(Ge, >=)
KILN_BINARY(Fill, b)  // a's value is never read, so its load compiles away: a pure store

#undef KILN_UNARY
#undef KILN_BINARY
#undef KILN_UNARY_INT
#undef KILN_BINARY_INT
#undef KILN_COMPARE

/// where(cond, a, b): a where cond is nonzero (NaN counts as nonzero).
struct Where {
  static constexpr int arity = 3;
  template <class C, class T>
  __device__ __forceinline__ static T apply(C c, T a, T b) {
    return c != C(0) ? a : b;
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
