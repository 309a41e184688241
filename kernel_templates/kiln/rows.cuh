#pragma once
// The row template: one block per row of the last axis. A fused elementwise prologue (Body)
// computes each element from the inputs; pass 1 folds the row into a statistic (Row::Stat)
// with a block reduction; pass 2, for ops that write the row (softmax, norms), computes
// Row::apply(x, params, weight, bias) and passes it through a fused elementwise epilogue (Epi,
// which reads it as x[Epi::Inputs::size]) to the outputs. Reductions write Epi of one value
// per row.
//
// Two strategies (Items): with Items > 0 each thread loads its Items groups of the row at once
// and keeps the prologue's values in registers for pass 2 (the row is read from memory once;
// Block * Items must cover the row; a Row with kFoldsCached folds the thread's values at once
// and may transform them, and pass 2 multiplies them by Row::scale); with Items == 0 threads
// stride over a row of any length (four groups at a time, each batch folded at once by a Row
// with kFoldsCached), keep the prologue's values of the row's first groups in
// the launch's dynamic shared memory (as many as it holds: the stash), and pass 2 reads those
// from there and recomputes the rest from memory (in L2 by then, if it fits).
//
// Slots of the layout and of Args::p: Epi's outputs, Body's inputs, Extra (the norms' weight
// and bias, [C]), then Epi's inputs. Scalars: Body's, eps, then Epi's. The layout's last Dim
// is the row, in groups of V elements.

#include <kiln/elementwise.cuh>
#include <kiln/row_stats.cuh>

namespace kiln {
namespace row {

/// The launch's dynamic shared memory, in bytes.
__device__ __forceinline__ unsigned dynamic_smem_bytes() {
  unsigned n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}

/// The streaming path's stash: V planes of `capacity` floats (float4 planes when V is a
/// multiple of 4), so that consecutive threads touch consecutive words.
template <int V>
struct Stash {
  float* base;
  unsigned capacity;  ///< groups it holds
  __device__ __forceinline__ Stash() {
    extern __shared__ float4 kiln_dynamic_smem[];
    base = reinterpret_cast<float*>(kiln_dynamic_smem);
    capacity = dynamic_smem_bytes() / (V * 4) / 4 * 4;
  }
  template <class Index>
  __device__ __forceinline__ void put(Index j, const float (&x)[V]) const {
    if constexpr (V % 4 == 0) {
#pragma unroll
      for (int q = 0; q < V / 4; ++q)
        reinterpret_cast<float4*>(base)[q * capacity + j] = make_float4(x[4 * q], x[4 * q + 1], x[4 * q + 2], x[4 * q + 3]);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) base[i * capacity + j] = x[i];
    }
  }
  template <class Index>
  __device__ __forceinline__ void get(Index j, float (&x)[V]) const {
    if constexpr (V % 4 == 0) {
#pragma unroll
      for (int q = 0; q < V / 4; ++q) {
        const float4 v = reinterpret_cast<const float4*>(base)[q * capacity + j];
        x[4 * q] = v.x, x[4 * q + 1] = v.y, x[4 * q + 2] = v.z, x[4 * q + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) x[i] = base[i * capacity + j];
    }
  }
};

/// The statistic of the whole block, in every thread.
template <class Row, int Block>
__device__ __forceinline__ typename Row::Stat block_reduce(typename Row::Stat v) {
  using Stat = typename Row::Stat;
  static_assert(sizeof(Stat) % 4 == 0, "a statistic is made of floats");
  constexpr int kFloats = sizeof(Stat) / 4;
  auto warp_reduce = [](Stat x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      Stat other;
#pragma unroll
      for (int i = 0; i < kFloats; ++i)
        reinterpret_cast<float*>(&other)[i] = __shfl_xor_sync(0xffffffffu, reinterpret_cast<const float*>(&x)[i], o);
      x = Row::merge(x, other);
    }
    return x;
  };
  __shared__ Stat partial[Block / 32];
  __shared__ Stat total;
  v = warp_reduce(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    Stat w = lane < Block / 32 ? partial[lane] : Row::init();
    w = warp_reduce(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
}

// What pass 2 reads for one group besides the row's values: the weight and bias (Extra) and
// the epilogue's inputs; store() computes the row op's value apply(i, x[i], weight[i],
// bias[i]) and the epilogue, and stores the outputs. Loading apart from storing lets a thread
// issue the loads of several groups before the first store.
template <class Epi, class Extra, class L, int V, int NO, int NI>
struct Tail {
  InputPacks<L, V, NO + NI, Extra> extra;
  InputPacks<L, V, NO + NI + Extra::size, typename Epi::Inputs> epi;

  template <class Index, int K>
  __device__ __forceinline__ void load(void* const* p, const Index (&off)[K]) {
    extra.load(p, off);
    epi.load(p, off);
  }
  template <class Index, int K, class Apply>
  __device__ __forceinline__ void store(void* const* p, const Index (&off)[K], const float (&x)[V], const Apply& apply,
                                        const float* epi_scalars) const {
    constexpr int NP = Epi::Inputs::size;
    float y[V][NO];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float wb[2] = {1.0f, 0.0f}, e[NP + 1];
      extra.values(i, wb);
      epi.values(i, e);
      e[NP] = apply(i, x[i], wb[0], wb[1]);
      Epi::apply(e, epi_scalars, y[i]);
    }
    StoreOutputs<0, typename Epi::Outputs, V>::run(p, off, y);
  }
};

// Pass 2 for one group at offsets `off` whose row values are `x`.
template <class Epi, class Extra, class L, int V, int NO, int NI, class Index, int K, class Apply>
__device__ __forceinline__ void write_group(void* const* p, const Index (&off)[K], const float (&x)[V],
                                            const Apply& apply, const float* epi_scalars) {
  Tail<Epi, Extra, L, V, NO, NI> tail;
  tail.load(p, off);
  tail.store(p, off, x, apply, epi_scalars);
}

}  // namespace row

template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block, int Items>
__global__ void __launch_bounds__(Block)
    rows(const Args<Epi::Outputs::size + Body::Inputs::size + Extra::size + Epi::Inputs::size,
                    Body::scalars + 1 + Epi::scalars> args,
         Index groups_per_row) {
  static_assert(Block % 32 == 0 && Block <= 1024, "a row block is whole warps, at most 1024 threads");
  static_assert(Items >= 0 && Items <= 16, "at most 16 groups per thread in registers");
  static_assert(Extra::size <= 2, "extra row inputs are weight and bias");
  constexpr int NO = Epi::Outputs::size;
  constexpr int NI = Body::Inputs::size;
  constexpr int K = NO + NI + Extra::size + Epi::Inputs::size;
  using Ins = InputPacks<L, V, NO, typename Body::Inputs>;
  const Index row_first = Index(blockIdx.x) * groups_per_row;
  const float eps = args.s[Body::scalars];
  const float* epi_scalars = args.s + Body::scalars + 1;
  const float n = float(groups_per_row) * float(V);
  // The prologue's V values of the group at `off`, its inputs already loaded.
  auto prologue = [&](const Ins& raw, float (&x)[V]) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float in[NI > 0 ? NI : 1], y[1];
      raw.values(i, in);
      Body::apply(in, args.s, y);
      x[i] = y[0];
    }
  };
  // Streaming: group j of the row loaded and through the prologue; `off` kept for pass 2's writes.
  auto load_group = [&](Index j, Index (&off)[K], float (&x)[V]) {
    L::offsets(row_first + j, off);
    Ins raw;
    raw.load(args.p, off);
    prologue(raw, x);
  };

  // Pass 1: the statistic (and, with Items, the row's values in registers).
  typename Row::Local local = Row::local_init();
  float cached[Items > 0 ? Items : 1][V];
  if constexpr (Items > 0) {
    Ins raw[Items];
#pragma unroll
    for (int it = 0; it < Items; ++it) {  // every load issued before the first is used
      const Index j = Index(it) * Block + threadIdx.x;
      if (j < groups_per_row) {
        Index off[K];
        L::offsets(row_first + j, off);
        raw[it].load(args.p, off);
      }
    }
    int loaded = 0;  // the thread's groups in this row: a prefix of `cached`
#pragma unroll
    for (int it = 0; it < Items; ++it)
      if (Index(it) * Block + threadIdx.x < groups_per_row) {
        prologue(raw[it], cached[it]);
        loaded = it + 1;
      }
    if constexpr (row::FoldsCached<Row>::value) {
      local = Row::fold(cached, loaded);
    } else {
#pragma unroll
      for (int it = 0; it < Items; ++it)
        if (it < loaded) {
#pragma unroll
          for (int i = 0; i < V; ++i) Row::local_add(local, cached[it][i]);
        }
    }
  } else {
    // Four groups loaded before the first is used; each one's values stashed if they fit.
    const row::Stash<V> stash;
    constexpr int kBatch = 4;
    Index j = threadIdx.x;
    for (; j + Index(kBatch - 1) * Block < groups_per_row; j += kBatch * Block) {
      Ins raw[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        Index off[K];
        L::offsets(row_first + j + Index(u) * Block, off);
        raw[u].load(args.p, off);
      }
      float x[kBatch][V];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        prologue(raw[u], x[u]);
        if (Row::kWritesRow && j + Index(u) * Block < stash.capacity) stash.put(j + Index(u) * Block, x[u]);
      }
      if constexpr (row::FoldsCached<Row>::value) {  // the batch folded at once (its values are not needed after)
        local = Row::merge(local, Row::fold(x, kBatch));
      } else {
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
#pragma unroll
          for (int i = 0; i < V; ++i) Row::local_add(local, x[u][i]);
      }
    }
    for (; j < groups_per_row; j += Block) {
      Index off[K];
      float x[V];
      load_group(j, off, x);
      if (Row::kWritesRow && j < stash.capacity) stash.put(j, x);
#pragma unroll
      for (int i = 0; i < V; ++i) Row::local_add(local, x[i]);
    }
  }
  const typename Row::Stat stat = row::block_reduce<Row, Block>(Row::to_stat(local));

  if constexpr (!Row::kWritesRow) {
    static_assert(Epi::Inputs::size == 0, "a reduction's epilogue reads nothing but the row value");
    if (threadIdx.x == 0) {
      Index off[K];
      L::offsets(row_first, off);
      float x[1] = {Row::finish(stat, n)}, y[1][NO];
      Epi::apply(x, epi_scalars, y[0]);
      StoreOutputs<0, typename Epi::Outputs, 1>::run(args.p, off, y);
    }
  } else {
    const typename Row::Params params = Row::params(stat, n, eps);
    const auto apply = [&](int, float x, float w, float b) { return Row::apply(x, params, w, b); };
    if constexpr (Items > 0) {
      float scale = 1.0f;
      if constexpr (row::FoldsCached<Row>::value) scale = Row::scale(params, local);
      const auto apply_cached = [&](int i, float x, float w, float b) {
        if constexpr (row::FoldsCached<Row>::value) return x * scale;
        else return apply(i, x, w, b);
      };
#pragma unroll
      for (int it = 0; it < Items; ++it) {
        const Index j = Index(it) * Block + threadIdx.x;
        if (j < groups_per_row) {
          Index off[K];
          L::offsets(row_first + j, off);
          row::write_group<Epi, Extra, L, V, NO, NI>(args.p, off, cached[it], apply_cached, epi_scalars);
        }
      }
    } else {  // the stash, then the prologue recomputed (the row is in L2 by now, if it fits)
      const row::Stash<V> stash;
      // Four groups' loads issued before the first store; two when a group carries 16 values or
      // more (bf16 norms: x and weight, bias), which spilled at 1024 threads (64 registers).
      constexpr int kBatch = V * (1 + Extra::size) >= 16 ? 2 : 4;
      Index j = threadIdx.x;
      for (; j + Index(kBatch - 1) * Block < groups_per_row; j += kBatch * Block) {
        Index off[kBatch][K];
        Ins raw[kBatch];
        row::Tail<Epi, Extra, L, V, NO, NI> tail[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          L::offsets(row_first + j + Index(u) * Block, off[u]);
          tail[u].load(args.p, off[u]);
          if (j + Index(u) * Block >= stash.capacity) raw[u].load(args.p, off[u]);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          float x[V];
          if (j + Index(u) * Block < stash.capacity) stash.get(j + Index(u) * Block, x);
          else prologue(raw[u], x);
          tail[u].store(args.p, off[u], x, apply, epi_scalars);
        }
      }
      for (; j < groups_per_row; j += Block) {
        Index off[K];
        float x[V];
        if (j < stash.capacity) {
          L::offsets(row_first + j, off);
          stash.get(j, x);
        } else {
          load_group(j, off, x);
        }
        row::write_group<Epi, Extra, L, V, NO, NI>(args.p, off, x, apply, epi_scalars);
      }
    }
  }
}

}  // namespace kiln
