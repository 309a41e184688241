#pragma once
// The elementwise template: out = F(in0, in1, in2) over a static Layout.
//
// Each thread handles kElementwiseUnroll groups of V consecutive elements along the innermost
// dim, issuing all loads before the first use. V > 1 (a 16-byte pack for the widest dtype) is
// chosen by the host only when every tensor operand is aligned for it and its inner stride is
// 1 (or 0: broadcast along the inner dim). Index is 32-bit unless offsets reach 2^31.

#include <kiln/dtype.cuh>
#include <kiln/layout.cuh>
#include <kiln/ops.cuh>
#include <kiln/vec.cuh>

namespace kiln {

constexpr int kElementwiseBlock = 256;
constexpr int kElementwiseUnroll = 4;

struct None {};    ///< no operand in this slot
struct Scalar {};  ///< a runtime f32 scalar argument

/// Loads the V values of one group of an operand of type T.
template <class T, int V, long long InnerStride>
struct Operand {
  template <class Index>
  __device__ __forceinline__ static void load(const void* p, Index off, float, float (&x)[V]) {
    const T* q = static_cast<const T*>(p) + off;
    if constexpr (V > 1 && InnerStride != 0) {
      const Pack<T, V> pk = load_pack<T, V>(q);
#pragma unroll
      for (int i = 0; i < V; ++i) x[i] = to_float(pk.v[i]);
    } else {
      const float y = to_float(*q);
#pragma unroll
      for (int i = 0; i < V; ++i) x[i] = y;
    }
  }
};

template <int V, long long InnerStride>
struct Operand<Scalar, V, InnerStride> {
  template <class Index>
  __device__ __forceinline__ static void load(const void*, Index, float s, float (&x)[V]) {
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = s;
  }
};

template <int V, long long InnerStride>
struct Operand<None, V, InnerStride> {
  template <class Index>
  __device__ __forceinline__ static void load(const void*, Index, float, float (&x)[V]) {
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = 0.0f;
  }
};

template <class F, class Out, class In0, class In1, class In2, class L, int V, class Index>
__global__ void __launch_bounds__(kElementwiseBlock)
    elementwise(void* __restrict__ out, const void* __restrict__ in0,
                const void* __restrict__ in1, const void* __restrict__ in2, float s0, float s1,
                float s2, Index groups) {
  static_assert(V >= 1 && (V & (V - 1)) == 0, "the vector width must be a power of two");
  constexpr int U = kElementwiseUnroll;
  using Inner = typename L::Inner;
  float x0[U][V], x1[U][V], x2[U][V];
  Index out_off[U];
  const Index first = Index(blockIdx.x) * Index(kElementwiseBlock * U) + Index(threadIdx.x);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index g = first + Index(u * kElementwiseBlock);
    if (g < groups) {
      Index off[4];
      L::offsets(g, off);
      out_off[u] = off[0];
      Operand<In0, V, Inner::template stride<1>()>::load(in0, off[1], s0, x0[u]);
      Operand<In1, V, Inner::template stride<2>()>::load(in1, off[2], s1, x1[u]);
      Operand<In2, V, Inner::template stride<3>()>::load(in2, off[3], s2, x2[u]);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index g = first + Index(u * kElementwiseBlock);
    if (g < groups) {
      Pack<Out, V> r;
#pragma unroll
      for (int i = 0; i < V; ++i) r.v[i] = from_float<Out>(op::invoke<F>(x0[u][i], x1[u][i], x2[u][i]));
      store_pack<Out, V>(static_cast<Out*>(out) + out_off[u], r);
    }
  }
}

}  // namespace kiln
