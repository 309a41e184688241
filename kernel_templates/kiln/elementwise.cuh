#pragma once
// The elementwise template: out = F(in0, in1, in2) over a static Layout.
//
// Each thread handles Unroll groups of V consecutive elements along the innermost dim (Block
// threads apart, so a warp's accesses are contiguous), issuing all loads before the first use. V > 1 (a 16-byte pack for the widest dtype) is
// chosen by the host only when every tensor operand is aligned for it and its inner stride is
// 1 (or 0: broadcast along the inner dim). Index is 32-bit unless offsets reach 2^31.

#include <kiln/dtype.cuh>
#include <kiln/layout.cuh>
#include <kiln/ops.cuh>
#include <kiln/vec.cuh>

namespace kiln {

struct None {};    ///< no operand in this slot
struct Scalar {};  ///< a runtime f32 scalar argument

/// One operand slot. load() fetches the raw bytes of one group (held until every load of
/// the thread is in flight); value() converts element i of them to f32.
template <class T, int V, long long InnerStride>
struct Operand {
  static constexpr bool kPacked = V > 1 && InnerStride != 0;  // else one element, broadcast
  using Raw = Pack<T, kPacked ? V : 1>;
  template <class Index>
  __device__ __forceinline__ static Raw load(const void* p, Index off) {
    return load_pack<T, kPacked ? V : 1>(static_cast<const T*>(p) + off);
  }
  __device__ __forceinline__ static float value(const Raw& r, int i, float) {
    return to_float(r.v[kPacked ? i : 0]);
  }
};

template <int V, long long InnerStride>
struct Operand<Scalar, V, InnerStride> {
  struct Raw {};
  template <class Index>
  __device__ __forceinline__ static Raw load(const void*, Index) { return {}; }
  __device__ __forceinline__ static float value(const Raw&, int, float s) { return s; }
};

template <int V, long long InnerStride>
struct Operand<None, V, InnerStride> {
  struct Raw {};
  template <class Index>
  __device__ __forceinline__ static Raw load(const void*, Index) { return {}; }
  __device__ __forceinline__ static float value(const Raw&, int, float) { return 0.0f; }
};

template <class F, class Out, class In0, class In1, class In2, class L, int V, class Index, int Block,
          int Unroll>
__global__ void __launch_bounds__(Block)
    elementwise(void* __restrict__ out, const void* __restrict__ in0,
                const void* __restrict__ in1, const void* __restrict__ in2, float s0, float s1,
                float s2, Index groups) {
  static_assert(V >= 1 && (V & (V - 1)) == 0, "the vector width must be a power of two");
  constexpr int U = Unroll;
  using Inner = typename L::Inner;
  using O0 = Operand<In0, V, Inner::template stride<1>()>;
  using O1 = Operand<In1, V, Inner::template stride<2>()>;
  using O2 = Operand<In2, V, Inner::template stride<3>()>;
  typename O0::Raw r0[U];
  typename O1::Raw r1[U];
  typename O2::Raw r2[U];
  Index out_off[U];
  const Index first = Index(blockIdx.x) * Index(Block * U) + Index(threadIdx.x);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index g = first + Index(u * Block);
    if (g < groups) {
      Index off[4];
      L::offsets(g, off);
      out_off[u] = off[0];
      r0[u] = O0::load(in0, off[1]);
      r1[u] = O1::load(in1, off[2]);
      r2[u] = O2::load(in2, off[3]);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index g = first + Index(u * Block);
    if (g < groups) {
      Pack<Out, V> r;
#pragma unroll
      for (int i = 0; i < V; ++i)
        r.v[i] = from_float<Out>(op::invoke<F>(O0::value(r0[u], i, s0), O1::value(r1[u], i, s1),
                                               O2::value(r2[u], i, s2)));
      store_pack<Out, V>(static_cast<Out*>(out) + out_off[u], r);
    }
  }
}

}  // namespace kiln
