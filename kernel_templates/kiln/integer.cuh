#pragma once
// Integer dtypes in kernels: i32 is `int`, i64 `long long`, both computed in their own type (a
// float holds neither exactly). Bodies that touch an integer are "typed": each value has its
// compute type (Compute), float for the float dtypes and bool. Arithmetic wraps (two's
// complement) as torch's does; division floors and the remainder takes the divisor's sign, as
// Python's; a division by zero gives 0.

#include <kiln/dtype.cuh>

namespace kiln {

template <class T>
struct Compute {
  using type = float;
};
template <>
struct Compute<int> {
  using type = int;
};
template <>
struct Compute<long long> {
  using type = long long;
};

template <class A, class B>
struct Same {
  static constexpr bool value = false;
};
template <class A>
struct Same<A, A> {
  static constexpr bool value = true;
};

template <class I>
struct Unsigned;
template <>
struct Unsigned<int> {
  using type = unsigned;
};
template <>
struct Unsigned<long long> {
  using type = unsigned long long;
};

/// A stored element as its compute value.
template <class T>
__device__ __forceinline__ typename Compute<T>::type to_compute(T x) {
  if constexpr (Same<typename Compute<T>::type, float>::value)
    return to_float(x);
  else
    return x;
}

/// The stored element of a compute value of the same dtype.
template <class T, class C>
__device__ __forceinline__ T from_compute(C x) {
  if constexpr (Same<typename Compute<T>::type, float>::value)
    return from_float<T>(x);
  else
    return T(x);
}

/// A cast: compute value x (of any dtype) as a value of dtype T. Float to integer truncates
/// toward zero, saturating, NaN to 0 (cvt.rzi); integer to float rounds to nearest; integer to
/// integer wraps.
template <class T, class C>
__device__ __forceinline__ typename Compute<T>::type convert(C x) {
  using R = typename Compute<T>::type;
  if constexpr (Same<R, float>::value) {
    return round_to<T>(float(x));
  } else if constexpr (Same<C, float>::value) {
    if (x != x) return 0;  // cvt.rzi.s64.f32 makes NaN the minimum
    if constexpr (Same<R, int>::value)
      return __float2int_rz(x);
    else
      return __float2ll_rz(x);
  } else {
    return R(typename Unsigned<R>::type(x));
  }
}

namespace integer {

template <class I>
__device__ __forceinline__ I add(I a, I b) {
  using U = typename Unsigned<I>::type;
  return I(U(a) + U(b));
}
template <class I>
__device__ __forceinline__ I sub(I a, I b) {
  using U = typename Unsigned<I>::type;
  return I(U(a) - U(b));
}
template <class I>
__device__ __forceinline__ I mul(I a, I b) {
  using U = typename Unsigned<I>::type;
  return I(U(a) * U(b));
}
template <class I>
__device__ __forceinline__ I neg(I a) {
  return sub(I(0), a);
}
/// floor(a / b); b == -1 wraps (the minimum stays itself); b == 0 gives 0.
template <class I>
__device__ __forceinline__ I floordiv(I a, I b) {
  if (b == 0) return 0;
  if (b == -1) return neg(a);
  const I q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
/// a - floor(a / b) b: the sign of b; 0 for b == 0.
template <class I>
__device__ __forceinline__ I remainder(I a, I b) {
  if (b == 0 || b == -1) return 0;
  const I r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

}  // namespace integer

/// Compute values of one type each, a recursive tuple: a typed body's inputs and outputs.
template <class... C>
struct Vals {};
template <class H, class... R>
struct Vals<H, R...> {
  H head;
  Vals<R...> tail;
  template <int I>
  __device__ __forceinline__ auto& get() {
    if constexpr (I == 0)
      return head;
    else
      return tail.template get<I - 1>();
  }
  template <int I>
  __device__ __forceinline__ const auto& get() const {
    if constexpr (I == 0)
      return head;
    else
      return tail.template get<I - 1>();
  }
};

}  // namespace kiln
