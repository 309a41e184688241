#pragma once
// The row template: one block per row of the last axis. A fused elementwise prologue (Body)
// computes each element from the inputs; pass 1 folds the row into a statistic (Row::Stat)
// with a block reduction; pass 2, for ops that write the row (softmax, norms), recomputes the
// prologue, computes Row::apply(x, params, weight, bias) and passes it through a fused
// elementwise epilogue (Epi, which reads it as x[Epi::Inputs::size]) to the outputs.
// Reductions write Epi of one value per row.
//
// Slots of the layout and of Args::p: Epi's outputs, Body's inputs, Extra (the norms' weight
// and bias, [C]), then Epi's inputs. Scalars: Body's, eps, then Epi's. The layout's last Dim
// is the row, in groups of V elements.

#include <kiln/elementwise.cuh>

namespace kiln {
namespace row {

__device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }

// A Row has a per-thread accumulator (Local, local_init, local_add), the statistic it turns
// into (Stat, to_stat) that merges across threads, and for ops that write the row the
// per-row parameters of the output (params) and apply(x, params, weight, bias).

struct Sum {
  struct Stat { float s; };
  using Local = Stat;
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {0.0f}; }
  __device__ static Local local_init() { return init(); }
  __device__ static void local_add(Local& a, float x) { a.s += x; }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static Stat merge(Stat a, Stat b) { return {a.s + b.s}; }
  __device__ static float finish(Stat a, float) { return a.s; }
};

struct Mean : Sum {
  __device__ static float finish(Stat a, float n) { return a.s / n; }
};

// max/min propagate NaN, as PyTorch does.
struct Max {
  struct Stat { float m; };
  using Local = Stat;
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {-inf()}; }
  __device__ static Local local_init() { return init(); }
  __device__ static Stat merge(Stat a, Stat b) { return {(b.m > a.m || b.m != b.m) ? b.m : a.m}; }
  __device__ static void local_add(Local& a, float x) { a = merge(a, Stat{x}); }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static float finish(Stat a, float) { return a.m; }
};

struct Min {
  struct Stat { float m; };
  using Local = Stat;
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {inf()}; }
  __device__ static Local local_init() { return init(); }
  __device__ static Stat merge(Stat a, Stat b) { return {(b.m < a.m || b.m != b.m) ? b.m : a.m}; }
  __device__ static void local_add(Local& a, float x) { a = merge(a, Stat{x}); }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static float finish(Stat a, float) { return a.m; }
};

constexpr float kLog2e = 1.4426950408889634f;

// Online softmax statistic: running max m and sum of exp(x - m), one exp per element.
struct SoftmaxStat {
  struct Stat { float m, s; };
  using Local = Stat;
  struct Params { float m, inv_s; };
  static constexpr bool kWritesRow = true;
  __device__ static Stat init() { return {-inf(), 0.0f}; }
  __device__ static Local local_init() { return init(); }
  __device__ static void local_add(Local& a, float x) {
    if (x != x || a.m != a.m) {  // NaN anywhere makes the whole row NaN, as in PyTorch
      a.m = x + a.m;
      return;
    }
    if (x > a.m) {
      a.s = a.s * exp2f((a.m - x) * kLog2e) + 1.0f;
      a.m = x;
    } else if (x != -inf()) {
      a.s += exp2f((x - a.m) * kLog2e);
    }
  }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static Stat merge(Stat a, Stat b) {
    if (b.m != b.m) return b;
    if (a.m != a.m) return a;
    const float m = fmaxf(a.m, b.m);
    if (m == -inf()) return a;  // both empty (or all -inf so far)
    return {m, a.s * exp2f((a.m - m) * kLog2e) + b.s * exp2f((b.m - m) * kLog2e)};
  }
  __device__ static Params params(Stat a, float, float) { return {a.m, 1.0f / a.s}; }
};

struct Softmax : SoftmaxStat {
  __device__ static float apply(float x, Params p, float, float) { return exp2f((x - p.m) * kLog2e) * p.inv_s; }
};

struct LogSoftmax : SoftmaxStat {
  __device__ static Params params(Stat a, float, float) { return {a.m + logf(a.s), 0.0f}; }
  __device__ static float apply(float x, Params p, float, float) { return x - p.m; }
};

// Mean and M2: each thread sums x - k and (x - k)^2 around its first value k (accurate when k
// is near the mean), then threads merge (n, mean, M2) pairwise (Chan et al.).
struct LayerNorm {
  struct Stat { float n, mean, m2; };
  struct Local { float n, k, s1, s2; };
  struct Params { float mean, rstd; };
  static constexpr bool kWritesRow = true;
  __device__ static Stat init() { return {0.0f, 0.0f, 0.0f}; }
  __device__ static Local local_init() { return {0.0f, 0.0f, 0.0f, 0.0f}; }
  __device__ static void local_add(Local& a, float x) {
    if (a.n == 0.0f) a.k = x;
    const float d = x - a.k;
    a.n += 1.0f;
    a.s1 += d;
    a.s2 += d * d;
  }
  __device__ static Stat to_stat(Local a) {
    if (a.n == 0.0f) return init();
    const float mean_d = a.s1 / a.n;
    return {a.n, a.k + mean_d, fmaxf(a.s2 - a.s1 * mean_d, 0.0f)};
  }
  __device__ static Stat merge(Stat a, Stat b) {
    const float n = a.n + b.n;
    if (n == 0.0f) return a;
    const float d = b.mean - a.mean, f = b.n / n;
    return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
  }
  __device__ static Params params(Stat a, float, float eps) { return {a.mean, rsqrtf(a.m2 / a.n + eps)}; }
  __device__ static float apply(float x, Params p, float w, float b) { return (x - p.mean) * p.rstd * w + b; }
};

struct RmsNorm {
  struct Stat { float ss; };
  using Local = Stat;
  struct Params { float rstd; };
  static constexpr bool kWritesRow = true;
  __device__ static Stat init() { return {0.0f}; }
  __device__ static Local local_init() { return init(); }
  __device__ static void local_add(Local& a, float x) { a.ss += x * x; }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static Stat merge(Stat a, Stat b) { return {a.ss + b.ss}; }
  __device__ static Params params(Stat a, float n, float eps) { return {rsqrtf(a.ss / n + eps)}; }
  __device__ static float apply(float x, Params p, float w, float b) { return x * p.rstd * w + b; }
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

template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block>
__global__ void __launch_bounds__(Block)
    rows(const Args<Epi::Outputs::size + Body::Inputs::size + Extra::size + Epi::Inputs::size,
                    Body::scalars + 1 + Epi::scalars> args,
         Index groups_per_row) {
  static_assert(Block % 32 == 0 && Block <= 1024, "a row block is whole warps, at most 1024 threads");
  static_assert(Extra::size <= 2, "extra row inputs are weight and bias");
  constexpr int NO = Epi::Outputs::size;
  constexpr int NI = Body::Inputs::size;
  constexpr int NE = Extra::size;
  constexpr int NP = Epi::Inputs::size;
  constexpr int K = NO + NI + NE + NP;
  using Inner = typename L::Inner;
  using Ins = InputPacks<L, V, NO, typename Body::Inputs>;
  const Index row_first = Index(blockIdx.x) * groups_per_row;
  const float eps = args.s[Body::scalars];
  const float* epi_scalars = args.s + Body::scalars + 1;
  const float n = float(groups_per_row) * float(V);

  // Pass 1: the statistic.
  typename Row::Local local = Row::local_init();
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
      Row::local_add(local, y[0]);
    }
  }
  const typename Row::Stat stat = row::block_reduce<Row, Block>(Row::to_stat(local));

  if constexpr (!Row::kWritesRow) {
    static_assert(NP == 0, "a reduction's epilogue reads nothing but the row value");
    if (threadIdx.x == 0) {
      Index off[K];
      L::offsets(row_first, off);
      float x[1] = {Row::finish(stat, n)}, y[1][NO];
      Epi::apply(x, epi_scalars, y[0]);
      StoreOutputs<0, typename Epi::Outputs, 1>::run(args.p, off, y);
    }
  } else {
    // Pass 2: recompute the prologue (the row is in L2 by now) and write the row.
    const typename Row::Params params = Row::params(stat, n, eps);
    for (Index j = threadIdx.x; j < groups_per_row; j += Block) {
      Index off[K];
      L::offsets(row_first + j, off);
      Ins raw;
      raw.load(args.p, off);
      InputPacks<L, V, NO + NI + NE, typename Epi::Inputs> epi_raw;
      epi_raw.load(args.p, off);
      float w[V], b[V];
#pragma unroll
      for (int i = 0; i < V; ++i) w[i] = 1.0f, b[i] = 0.0f;
      if constexpr (NE >= 1) {
        using O = Operand<typename detail::TypeAt<0, Extra>::type, V, Inner::template stride<NO + NI>()>;
        const auto r = O::load(args.p[NO + NI], off[NO + NI]);
#pragma unroll
        for (int i = 0; i < V; ++i) w[i] = O::value(r, i);
      }
      if constexpr (NE >= 2) {
        using O = Operand<typename detail::TypeAt<1, Extra>::type, V, Inner::template stride<NO + NI + 1>()>;
        const auto r = O::load(args.p[NO + NI + 1], off[NO + NI + 1]);
#pragma unroll
        for (int i = 0; i < V; ++i) b[i] = O::value(r, i);
      }
      float y[V][NO];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        float x[NI > 0 ? NI : 1], p[1], e[NP + 1];
        raw.values(i, x);
        Body::apply(x, args.s, p);
        epi_raw.values(i, e);
        e[NP] = Row::apply(p[0], params, w[i], b[i]);
        Epi::apply(e, epi_scalars, y[i]);
      }
      StoreOutputs<0, typename Epi::Outputs, V>::run(args.p, off, y);
    }
  }
}

}  // namespace kiln
