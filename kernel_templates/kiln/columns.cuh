#pragma once
// The column template: a row op along an axis that is not the last, for a tensor seen as
// [Outer, R, Inner] (the layout L lists its dims; R is the reduced axis, Inner the contiguous
// one, in IG groups of V elements). A block takes BX groups of columns of one outer index;
// its BY threads per column stride over R, each folding its V columns into their statistics
// (Row::Local), then the block merges them over BY in shared memory. Reductions write Epi of
// one value per column (the output steps by 0 along R); softmax reads the columns again and
// writes Row::apply through Epi, like pass 2 of rows.cuh.
//
// Slots are those of rows.cuh with no Extra (norms work along the last axis only).

#include <kiln/row_parts.cuh>
#include <kiln/row_stats.cuh>

namespace kiln {

template <class Body, class Row, class Epi, class L, int V, class Index, int BX, int BY,
          long long R, long long IG>
__global__ void __launch_bounds__(BX* BY)
    columns(const Args<Epi::Outputs::size + Body::Inputs::size + Epi::Inputs::size +
                           kExtraSlots<L>,
                       Body::scalars + 1 + Epi::scalars>
                args,
            Index) {
  static_assert(BX * BY % 32 == 0 && BX * BY <= 1024,
                "a column block is whole warps, at most 1024 threads");
  static_assert((BY & (BY - 1)) == 0, "BY is a power of two");
  constexpr int NO = Epi::Outputs::size;
  constexpr int NI = Body::Inputs::size;
  constexpr int K = NO + NI + Epi::Inputs::size + kExtraSlots<L>;
  using Stat = typename Row::Stat;
  constexpr Index kBlocksPerOuter = Index((IG + BX - 1) / BX);
  const Index outer = Index(blockIdx.x) / kBlocksPerOuter;
  const int tx = int(threadIdx.x) % BX, ty = int(threadIdx.x) / BX;
  const Index ig = (Index(blockIdx.x) % kBlocksPerOuter) * BX + Index(tx);
  const bool active = ig < Index(IG);
  const float eps = args.s[Body::scalars];
  const float* epi_scalars = args.s + Body::scalars + 1;
  typename Row::Local local[V];
#pragma unroll
  for (int i = 0; i < V; ++i) local[i] = Row::local_init();
  const row::RowCursor<L, Index, K> whole(Index(0), Index(0), Index(0), row::NoGeometry{});
  if (active) {
#pragma unroll 4
    for (Index r = Index(ty); r < Index(R); r += BY) {
      Index off[K];
      float x[V];
      row::load_group<Body, L, V, NO>(args, whole, (outer * Index(R) + r) * Index(IG) + ig, off, x);
#pragma unroll
      for (int i = 0; i < V; ++i) Row::local_add(local[i], x[i]);
    }
  }
  // Merge over BY: a tree in shared memory; row 0 ends with each column's statistic.
  __shared__ Stat part[BY][BX * V];
#pragma unroll
  for (int i = 0; i < V; ++i) part[ty][tx * V + i] = Row::to_stat(local[i]);
  __syncthreads();
#pragma unroll
  for (int h = BY / 2; h > 0; h /= 2) {
    if (ty < h) {
#pragma unroll
      for (int i = 0; i < V; ++i)
        part[ty][tx * V + i] = Row::merge(part[ty][tx * V + i], part[ty + h][tx * V + i]);
    }
    __syncthreads();
  }
  if (!active) return;

  if constexpr (!Row::kWritesRow) {
    static_assert(Epi::Inputs::size == 0, "a reduction's epilogue reads nothing but the row value");
    if (ty == 0) {
      Index off[K];
      L::offsets(outer * Index(R) * Index(IG) + ig, off);  // r = 0: the output steps by 0 along R
      float y[V][NO];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        float x[1] = {Row::finish(part[0][tx * V + i], float(R), eps)};
        Epi::apply(x, epi_scalars, y[i]);
      }
      StoreOutputs<0, typename Epi::Outputs, V>::run(args.p, off, y);
    }
  } else {
    typename Row::Params params[V];
#pragma unroll
    for (int i = 0; i < V; ++i) params[i] = Row::params(part[0][tx * V + i], float(R), eps);
    const auto apply = [&](int i, float x, float w, float b) {
      return Row::apply(x, params[i], w, b);
    };
    for (Index r = Index(ty); r < Index(R); r += BY) {
      Index off[K];
      float x[V];
      row::load_group<Body, L, V, NO>(args, whole, (outer * Index(R) + r) * Index(IG) + ig, off, x);
      row::write_group<Epi, Types<>, L, V, NO, NI>(args.p, off, x, apply, epi_scalars);
    }
  }
}

}  // namespace kiln
