#pragma once
// The row template: one block per row of the last axis. A fused elementwise prologue (Body)
// computes each element from the inputs; pass 1 folds the row into a statistic (Row::Stat)
// with a block reduction; pass 2, for ops that write the row (softmax, norms), recomputes the
// prologue and writes Row::apply(x, stat, weight, bias). Reductions write one value per row.
//
// Slots of the layout and of Args::p: the output, the Body's inputs, then Extra (the norms'
// weight and bias, [C]). The layout's last Dim is the row, in groups of V elements.

#include <kiln/elementwise.cuh>

namespace kiln {
namespace row {

__device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }

struct Sum {
  struct Stat { float s; };
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {0.0f}; }
  __device__ static void add(Stat& a, float x) { a.s += x; }
  __device__ static Stat merge(Stat a, Stat b) { return {a.s + b.s}; }
  __device__ static float finish(Stat a, float) { return a.s; }
};

struct Mean : Sum {
  __device__ static float finish(Stat a, float n) { return a.s / n; }
};

// max/min propagate NaN, as PyTorch does.
struct Max {
  struct Stat { float m; };
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {-inf()}; }
  __device__ static void add(Stat& a, float x) { a.m = (x > a.m || x != x) ? x : a.m; }
  __device__ static Stat merge(Stat a, Stat b) { return {(b.m > a.m || b.m != b.m) ? b.m : a.m}; }
  __device__ static float finish(Stat a, float) { return a.m; }
};

struct Min {
  struct Stat { float m; };
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {inf()}; }
  __device__ static void add(Stat& a, float x) { a.m = (x < a.m || x != x) ? x : a.m; }
  __device__ static Stat merge(Stat a, Stat b) { return {(b.m < a.m || b.m != b.m) ? b.m : a.m}; }
  __device__ static float finish(Stat a, float) { return a.m; }
};

// Online softmax statistic: running max m and sum of exp(x - m).
struct SoftmaxStat {
  struct Stat { float m, s; };
  __device__ static Stat init() { return {-inf(), 0.0f}; }
  __device__ static Stat merge(Stat a, Stat b) {
    if (b.m != b.m) return b;  // NaN anywhere makes the whole row NaN, as in PyTorch
    if (a.m != a.m) return a;
    const float m = fmaxf(a.m, b.m);
    if (m == -inf()) return a;  // both empty (or all -inf so far)
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
  }
  __device__ static void add(Stat& a, float x) { a = merge(a, Stat{x, 1.0f}); }
};

struct Softmax : SoftmaxStat {
  static constexpr bool kWritesRow = true;
  __device__ static float apply(float x, Stat a, float, float, float) { return expf(x - a.m) / a.s; }
};

struct LogSoftmax : SoftmaxStat {
  static constexpr bool kWritesRow = true;
  __device__ static float apply(float x, Stat a, float, float, float) { return x - a.m - logf(a.s); }
};

// Welford mean and M2, merged pairwise (Chan et al.).
struct LayerNorm {
  struct Stat { float n, mean, m2; };
  static constexpr bool kWritesRow = true;
  __device__ static Stat init() { return {0.0f, 0.0f, 0.0f}; }
  __device__ static Stat merge(Stat a, Stat b) {
    const float n = a.n + b.n;
    if (n == 0.0f) return a;
    const float d = b.mean - a.mean, f = b.n / n;
    return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
  }
  __device__ static void add(Stat& a, float x) { a = merge(a, Stat{1.0f, x, 0.0f}); }
  __device__ static float apply(float x, Stat a, float w, float b, float eps) {
    return (x - a.mean) * rsqrtf(a.m2 / a.n + eps) * w + b;
  }
};

struct RmsNorm {
  struct Stat { float n, ss; };
  static constexpr bool kWritesRow = true;
  __device__ static Stat init() { return {0.0f, 0.0f}; }
  __device__ static Stat merge(Stat a, Stat b) { return {a.n + b.n, a.ss + b.ss}; }
  __device__ static void add(Stat& a, float x) { a.n += 1.0f; a.ss += x * x; }
  __device__ static float apply(float x, Stat a, float w, float b, float eps) { return x * rsqrtf(a.ss / a.n + eps) * w + b; }
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

}  // namespace row

template <class Body, class Row, class Out, class Extra, class L, int V, class Index, int Block>
__global__ void __launch_bounds__(Block)
    rows(const Args<1 + Body::Inputs::size + Extra::size, Body::scalars + 1> args, Index groups_per_row) {
  static_assert(Block % 32 == 0 && Block <= 1024, "a row block is whole warps, at most 1024 threads");
  static_assert(Extra::size <= 2, "extra row inputs are weight and bias");
  constexpr int NI = Body::Inputs::size;
  constexpr int K = 1 + NI + Extra::size;
  using Inner = typename L::Inner;
  using Ins = InputPacks<L, V, 1, typename Body::Inputs>;
  const Index row_first = Index(blockIdx.x) * groups_per_row;
  const float eps = args.s[Body::scalars];
  const float n = float(groups_per_row) * float(V);

  // Pass 1: the statistic.
  typename Row::Stat stat = Row::init();
  for (Index j = threadIdx.x; j < groups_per_row; j += Block) {
    Index off[K];
    L::offsets(row_first + j, off);
    Ins raw;
    raw.load(args.p, off);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float x[NI > 0 ? NI : 1], y[1];
      raw.values(i, x);
      Body::apply(x, args.s, y);
      Row::add(stat, y[0]);
    }
  }
  stat = row::block_reduce<Row, Block>(stat);

  if constexpr (!Row::kWritesRow) {
    if (threadIdx.x == 0) {
      Index off[K];
      L::offsets(row_first, off);
      static_cast<Out*>(args.p[0])[off[0]] = from_float<Out>(Row::finish(stat, n));
    }
  } else {
    // Pass 2: recompute the prologue (the row is in L2 by now) and write the row.
    for (Index j = threadIdx.x; j < groups_per_row; j += Block) {
      Index off[K];
      L::offsets(row_first + j, off);
      Ins raw;
      raw.load(args.p, off);
      float w[V], b[V];
#pragma unroll
      for (int i = 0; i < V; ++i) w[i] = 1.0f, b[i] = 0.0f;
      if constexpr (Extra::size >= 1) {
        using O = Operand<typename detail::TypeAt<0, Extra>::type, V, Inner::template stride<1 + NI>()>;
        const auto r = O::load(args.p[1 + NI], off[1 + NI]);
#pragma unroll
        for (int i = 0; i < V; ++i) w[i] = O::value(r, i);
      }
      if constexpr (Extra::size >= 2) {
        using O = Operand<typename detail::TypeAt<1, Extra>::type, V, Inner::template stride<2 + NI>()>;
        const auto r = O::load(args.p[2 + NI], off[2 + NI]);
#pragma unroll
        for (int i = 0; i < V; ++i) b[i] = O::value(r, i);
      }
      Pack<Out, V> out;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        float x[NI > 0 ? NI : 1], y[1];
        raw.values(i, x);
        Body::apply(x, args.s, y);
        out.v[i] = from_float<Out>(Row::apply(y[0], stat, w[i], b[i], eps));
      }
      store_pack<Out, V>(static_cast<Out*>(args.p[0]) + off[0], out);
    }
  }
}

}  // namespace kiln
