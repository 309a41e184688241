#pragma once
// The arg template: argmax and argmin along the last dim of the layout, one block per row. A
// fused elementwise prologue (Body) computes each element from the inputs; each thread keeps
// the best (value, position) of the groups it strides over, issuing Items groups' loads before
// it compares, then the block merges them (warp shuffles, then one value per warp in shared
// memory) and writes the position as an i64 (slot 0, which steps by 0 along the row).
// Best is torch's: a NaN beats every number (the first NaN wins), then the larger (argmax) or
// smaller (argmin), then the earlier position.
//
// int_rows is the same search for the integer reductions (sum, min, max of i32 or i64 x, read as
// it is: Body is the identity on it): exact, in 64 bits (a sum wraps as two's complement), the
// result stored as the output's type.
//
// Slots: the output, then Body's inputs (then a gathering layout's index tensors and status).

#include <kiln/elementwise.cuh>
#include <kiln/row_parts.cuh>

namespace kiln {
namespace arg {

/// Whether (v, i) beats (bv, bi).
template <bool Min>
__device__ __forceinline__ bool better(float v, long long i, float bv, long long bi) {
  const bool vn = v != v, bn = bv != bv;
  if (vn || bn) return vn && (!bn || i < bi);
  if (Min ? v < bv : v > bv) return true;
  return v == bv && i < bi;
}

template <bool Min>
struct Best {
  float v = Min ? __int_as_float(0x7f800000) : __int_as_float(0xff800000);
  long long i = 0x7fffffffffffffffll;
  __device__ __forceinline__ void take(float x, long long at) {
    if (better<Min>(x, at, v, i)) v = x, i = at;
  }
  __device__ __forceinline__ void take_warp() {
#pragma unroll
    for (int d = 16; d > 0; d /= 2)
      take(__shfl_xor_sync(0xffffffffu, v, d), __shfl_xor_sync(0xffffffffu, i, d));
  }
};

/// An integer reduction's running value: Op 0 sums, 1 takes the smallest, 2 the largest.
template <int Op>
struct Exact {
  long long v = Op == 0 ? 0ll : Op == 1 ? 0x7fffffffffffffffll : -0x7fffffffffffffffll - 1;
  __device__ __forceinline__ void take(long long x) {
    if constexpr (Op == 0)
      v = (long long)((unsigned long long)v + (unsigned long long)x);  // wraps, no UB
    else
      v = Op == 1 ? (x < v ? x : v) : (x > v ? x : v);
  }
  __device__ __forceinline__ void take_warp() {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) take(__shfl_xor_sync(0xffffffffu, v, d));
  }
};

}  // namespace arg

template <class Body, int Op, class Out, class L, int V, class Index, int Block, int Items,
          long long IG>
__global__ void __launch_bounds__(Block)
    int_rows(const Args<1 + Body::Inputs::size + kExtraSlots<L>, Body::scalars> args, Index) {
  static_assert(Body::Inputs::size == 1, "an integer reduction reads x as it is");
  constexpr int K = 1 + Body::Inputs::size + kExtraSlots<L>;
  const row::RowCursor<L, Index, K> at(Index(blockIdx.x), Index(IG), Index(0), row::NoGeometry{});
  arg::Exact<Op> acc;
  for (Index j = threadIdx.x; (long long)j < IG; j += Index(Block * Items)) {
    InputPacks<L, V, 1, typename Body::Inputs> raw[Items];
#pragma unroll
    for (int u = 0; u < Items; ++u) {
      Index off[K];
      if ((long long)j + u * Block < IG) {
        at.offsets(j + Index(u * Block), off);
        raw[u].load(args.p, off);
      }
    }
#pragma unroll
    for (int u = 0; u < Items; ++u)
      if ((long long)j + u * Block < IG)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          ValuesOf<typename Body::Inputs> x;
          raw[u].computes(e, x);
          acc.take((long long)x.head);
        }
  }
  acc.take_warp();
  __shared__ long long partial[Block / 32];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  if (lane == 0) partial[warp] = acc.v;
  __syncthreads();
  if (warp != 0) return;
  arg::Exact<Op> total;
  if (lane < Block / 32) total.v = partial[lane];
  total.take_warp();
  if (lane == 0) {
    Index off[K];
    at.offsets(Index(0), off);
    static_cast<Out*>(args.p[0])[off[0]] = Out(total.v);
  }
}

template <class Body, bool Min, class L, int V, class Index, int Block, int Items, long long IG>
__global__ void __launch_bounds__(Block)
    arg_rows(const Args<1 + Body::Inputs::size + kExtraSlots<L>, Body::scalars> args, Index) {
  static_assert(Block % 32 == 0 && Block <= 1024, "an arg block is whole warps, at most 1024");
  static_assert(Items >= 1 && IG >= 1, "an arg row has groups, a thread at least one");
  constexpr int K = 1 + Body::Inputs::size + kExtraSlots<L>;
  constexpr long long kChunk = (long long)Block * Items;
  const row::RowCursor<L, Index, K> at(Index(blockIdx.x), Index(IG), Index(0), row::NoGeometry{});
  arg::Best<Min> best;
  Index j = threadIdx.x;
  // Whole chunks: every group's load issued before the first comparison.
  for (; (long long)j + (Items - 1) * Block < IG; j += Index(kChunk)) {
    float x[Items][V];
#pragma unroll
    for (int u = 0; u < Items; ++u) {
      Index off[K];
      row::load_group<Body, L, V, 1>(args, at, j + Index(u * Block), off, x[u]);
    }
#pragma unroll
    for (int u = 0; u < Items; ++u)
#pragma unroll
      for (int e = 0; e < V; ++e) best.take(x[u][e], ((long long)j + u * Block) * V + e);
  }
  for (; (long long)j < IG; j += Index(Block)) {
    float x[V];
    Index off[K];
    row::load_group<Body, L, V, 1>(args, at, j, off, x);
#pragma unroll
    for (int e = 0; e < V; ++e) best.take(x[e], (long long)j * V + e);
  }
  best.take_warp();
  __shared__ float values[Block / 32];
  __shared__ long long places[Block / 32];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  if (lane == 0) values[warp] = best.v, places[warp] = best.i;
  __syncthreads();
  if (warp != 0) return;
  arg::Best<Min> total;
  if (lane < Block / 32) total.v = values[lane], total.i = places[lane];
  total.take_warp();
  if (lane == 0) {
    Index off[K];
    at.offsets(Index(0), off);
    static_cast<long long*>(args.p[0])[off[0]] = total.i;
  }
}

}  // namespace kiln
