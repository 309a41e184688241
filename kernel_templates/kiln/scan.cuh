#pragma once
// The scan template: an inclusive prefix sum (cumsum) along one axis, with a fused elementwise
// prologue (Body: the value each element adds) and epilogue (Epi: reads the running sum as its
// row value, Ref::Kind::row). The host lays the operands out as rows along the scanned axis:
// the layout's last dim, IG groups of V elements (V > 1 only where the axis is contiguous).
// A block scans one row in chunks of Block * Items groups; a thread takes Items groups of a
// chunk, Block groups apart, so that a warp's loads are contiguous.
//
// Within a chunk each thread sums its group's V elements in registers, a warp scans its
// threads' group totals with shuffles, and the warps' totals meet in shared memory (two
// buffers, alternating, so that one barrier a chunk suffices). Every thread then adds what lies
// before its group: the row's carry, the chunk's earlier sub-chunks and earlier warps, summed in
// one order by every thread, so that the carry is the same in all of them. Sums are f32 for
// every dtype. Reverse scans from the row's end (suffix sums): logical position p is group
// IG - 1 - p, its elements backwards.
//
// Slots: Epi's outputs, Body's inputs, Epi's inputs (rows.cuh's, without Extra).

#include <kiln/row_parts.cuh>

namespace kiln {
namespace scan {

/// The epilogue's row value: the running sum itself (write_group's Apply).
struct Running {
  __device__ __forceinline__ float operator()(int, float x, float, float) const { return x; }
};

/// The inclusive sum of `v` over the lanes up to this one.
__device__ __forceinline__ float warp_inclusive(float v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const float o = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += o;
  }
  return v;
}

template <int V>
__device__ __forceinline__ void reverse(float (&x)[V]) {
#pragma unroll
  for (int i = 0; i < V / 2; ++i) {
    const float t = x[i];
    x[i] = x[V - 1 - i];
    x[V - 1 - i] = t;
  }
}

/// Adds to each of a thread's Items groups (`x`, each already scanned within itself) what lies
/// before it in the row: `carry`, then the chunk's sums before it; returns the carry after the
/// chunk. `totals` is this chunk's buffer: Items x Warps warp totals.
template <int Items, int V, int Warps>
__device__ __forceinline__ float add_prefix(float (&x)[Items][V], float (*totals)[Warps],
                                            float carry) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  float before[Items];
#pragma unroll
  for (int it = 0; it < Items; ++it) {
    const float incl = warp_inclusive(x[it][V - 1], lane);
    const float prev = __shfl_up_sync(0xffffffffu, incl, 1);
    before[it] = lane == 0 ? 0.0f : prev;
    if (lane == 31) totals[it][warp] = incl;
  }
  __syncthreads();
#pragma unroll
  for (int it = 0; it < Items; ++it) {
    float at_warp = carry;
#pragma unroll
    for (int w = 0; w < Warps; ++w) {
      if (w == warp) at_warp = carry;
      carry += totals[it][w];
    }
    const float add = at_warp + before[it];
#pragma unroll
    for (int i = 0; i < V; ++i) x[it][i] += add;
  }
  return carry;
}

}  // namespace scan

template <class Body, class Epi, class L, int V, class Index, int Block, int Items, long long IG,
          bool Reverse>
__global__ void __launch_bounds__(Block)
    scan_rows(const Args<Epi::Outputs::size + Body::Inputs::size + Epi::Inputs::size +
                             kExtraSlots<L>,
                         Body::scalars + Epi::scalars>
                  args,
              Index) {
  static_assert(Block % 32 == 0 && Block <= 1024, "a scan block is whole warps, at most 1024");
  static_assert(Items >= 1 && IG >= 1, "a scan row has groups, a thread at least one");
  constexpr int NO = Epi::Outputs::size;
  constexpr int NI = Body::Inputs::size;
  constexpr int K = NO + NI + Epi::Inputs::size + kExtraSlots<L>;
  constexpr int kWarps = Block / 32;
  constexpr long long kChunk = (long long)Block * Items;
  // Every chunk full: no group needs a bounds test (a predicated load is issued late).
  constexpr bool kWhole = IG % kChunk == 0;
  __shared__ float totals[2][Items][kWarps];
  const row::RowCursor<L, Index, K> at(Index(blockIdx.x), Index(IG), Index(0), row::NoGeometry{});
  const float* epi_scalars = args.s + Body::scalars;
  float carry = 0.0f;
  int buffer = 0;
  for (long long first = 0; first < IG; first += kChunk, buffer ^= 1) {
    float x[Items][V];
    Index off[Items][K];
#pragma unroll
    for (int it = 0; it < Items; ++it) {
      const long long p = first + (long long)it * Block + threadIdx.x;
      // A group past the row loads its last one again and counts as zeros.
      const long long q = kWhole || p < IG ? p : IG - 1;
      row::load_group<Body, L, V, NO>(args, at, Index(Reverse ? IG - 1 - q : q), off[it], x[it]);
      if constexpr (Reverse) scan::reverse(x[it]);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        if (!kWhole && p >= IG) x[it][i] = 0.0f;
        if (i > 0) x[it][i] += x[it][i - 1];
      }
    }
    carry = scan::add_prefix<Items, V, kWarps>(x, totals[buffer], carry);
#pragma unroll
    for (int it = 0; it < Items; ++it) {
      if (!kWhole && first + (long long)it * Block + threadIdx.x >= IG) continue;
      if constexpr (Reverse) scan::reverse(x[it]);
      row::write_group<Epi, Types<>, L, V, NO, NI>(args.p, off[it], x[it], scan::Running{},
                                                   epi_scalars);
    }
  }
}

}  // namespace kiln
