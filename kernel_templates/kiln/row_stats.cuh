#pragma once
// The statistics of the row template (rows.cuh). A Row has a per-thread accumulator (Local,
// local_init, local_add), the statistic it turns into (Stat, to_stat) that merges across
// threads; a reduction its value, finish(stat, n, scalar) (the scalar: var's correction), and an
// op that writes the row the per-row parameters of the output (params) and
// apply(x, params, weight, bias).

namespace kiln {
namespace row {

__device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }

/// 2^x by the SFU alone (ex2.approx.ftz: ~2 ulp, subnormal results flushed to 0; exp2f adds
/// range handling around it, ~4 instructions more per element).
__device__ __forceinline__ float exp2_fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// a / b within about an ulp: the SFU's reciprocal and one Newton step on the quotient, which
/// is skipped where its residual is NaN (a or b infinite, or b 0: the first quotient is then
/// the IEEE one: inf / n = inf, rms_norm's rstd 0 on a row holding -inf). For the per-row
/// parameters (one division a row): an IEEE division (div.rn, rcp.rn) is a subroutine that
/// ptxas takes ~10 ms of a row kernel's cold compile to build.
__device__ __forceinline__ float quotient(float a, float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  const float q = a * r, e = fmaf(-b, q, a);
  return e == e ? fmaf(e, r, q) : q;
}

/// a[0] op a[1] op ... op a[V-1] as a tree (V a power of two): log2(V) dependent steps, not V.
/// The folds below keep V accumulators (one per lane of a group), then merge them so.
template <int V, class Op>
__device__ __forceinline__ float tree(float (&a)[V], Op op) {
#pragma unroll
  for (int w = V / 2; w > 0; w /= 2)
#pragma unroll
    for (int i = 0; i < w; ++i) a[i] = op(a[i], a[i + w]);
  return a[0];
}
__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ float max_of(float a, float b) { return fmaxf(a, b); }

/// op over f(x) of a thread's first n groups: one accumulator per lane (from `init`, op's
/// identity), then the lanes merged by tree().
template <int N, int V, class F, class Op>
__device__ __forceinline__ float fold_lanes(const float (&x)[N][V], int n, float init, F f, Op op) {
  float acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) acc[i] = init;
#pragma unroll
  for (int it = 0; it < N; ++it)
#pragma unroll
    for (int i = 0; i < V; ++i)
      acc[i] = op(acc[i], it < n ? f(x[it][i]) : init);  // init: op's identity
  return tree(acc, op);
}
__device__ __forceinline__ float same(float v) { return v; }
__device__ __forceinline__ float square(float v) { return v * v; }

/// What a Row can do besides local_add (rows.cuh): kFoldsCached, fold a group of a thread's
/// values at once (Row::fold(x, n), to a Local); kRescalesCached, fold replaces the values by
/// ones that pass 2 only multiplies by Row::scale(params, local).
struct RowTraits {
  static constexpr bool kFoldsCached = false;
  static constexpr bool kRescalesCached = false;
};

struct Sum : RowTraits {
  struct Stat {
    float s;
  };
  using Local = Stat;
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {0.0f}; }
  __device__ static Local local_init() { return init(); }
  __device__ static void local_add(Local& a, float x) { a.s += x; }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static Stat merge(Stat a, Stat b) { return {a.s + b.s}; }
  __device__ static float finish(Stat a, float, float) { return a.s; }
};

struct Mean : Sum {
  __device__ static float finish(Stat a, float n, float) { return quotient(a.s, n); }
};

// max/min propagate NaN, as PyTorch does.
struct Max : RowTraits {
  struct Stat {
    float m;
  };
  using Local = Stat;
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {-inf()}; }
  __device__ static Local local_init() { return init(); }
  __device__ static Stat merge(Stat a, Stat b) { return {(b.m > a.m || b.m != b.m) ? b.m : a.m}; }
  __device__ static void local_add(Local& a, float x) { a = merge(a, Stat{x}); }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static float finish(Stat a, float, float) { return a.m; }
};

struct Min : RowTraits {
  struct Stat {
    float m;
  };
  using Local = Stat;
  static constexpr bool kWritesRow = false;
  __device__ static Stat init() { return {inf()}; }
  __device__ static Local local_init() { return init(); }
  __device__ static Stat merge(Stat a, Stat b) { return {(b.m < a.m || b.m != b.m) ? b.m : a.m}; }
  __device__ static void local_add(Local& a, float x) { a = merge(a, Stat{x}); }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static float finish(Stat a, float, float) { return a.m; }
};

constexpr float kLog2e = 1.4426950408889634f;

// Online softmax statistic: running max m and sum of exp(x - m), one exp per element.
struct SoftmaxStat : RowTraits {
  struct Stat {
    float m, s;
  };
  using Local = Stat;
  struct Params {
    float m, inv_s;
  };
  static constexpr bool kWritesRow = true;
  __device__ static Stat init() { return {-inf(), 0.0f}; }
  __device__ static Local local_init() { return init(); }
  __device__ static void local_add(Local& a, float x) {
    if (x != x || a.m != a.m) {  // NaN anywhere makes the whole row NaN, as in PyTorch
      a.m = x + a.m;
      return;
    }
    if (x > a.m) {
      a.s = a.s * exp2_fast((a.m - x) * kLog2e) + 1.0f;
      a.m = x;
    } else if (x != -inf()) {
      a.s += exp2_fast((x - a.m) * kLog2e);
    }
  }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static Stat merge(Stat a, Stat b) {
    if (b.m != b.m) return b;
    if (a.m != a.m) return a;
    const float m = fmaxf(a.m, b.m);
    if (m == -inf()) return a;  // both empty (or all -inf so far)
    return {m, a.s * exp2_fast((a.m - m) * kLog2e) + b.s * exp2_fast((b.m - m) * kLog2e)};
  }
  __device__ static Params params(Stat a, float, float) { return {a.m, quotient(1.0f, a.s)}; }
};

struct Softmax : SoftmaxStat {
  __device__ static float apply(float x, Params p, float, float) {
    return exp2_fast((x - p.m) * kLog2e) * p.inv_s;
  }
  // A thread's values become exp(x - m) for its own max m (one exp per element, no dependent
  // update per element); pass 2 multiplies them by exp(m - row max) / sum. A NaN is skipped by
  // the max and makes the sum NaN, so the whole row is NaN, as in PyTorch.
  static constexpr bool kFoldsCached = true;
  static constexpr bool kRescalesCached = true;
  template <int N, int V>
  __device__ static Local fold(float (&x)[N][V], int n) {
    const float m = fold_lanes(x, n, -inf(), same, max_of);
    const float base = m == -inf() ? 0.0f : m;  // all -inf: exp(-inf - 0) = 0, not exp(NaN)
    float sv[V];
#pragma unroll
    for (int i = 0; i < V; ++i) sv[i] = 0.0f;
#pragma unroll
    for (int it = 0; it < N; ++it)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float e = it < n ? exp2_fast((x[it][i] - base) * kLog2e) : 0.0f;
        x[it][i] = e;
        sv[i] += e;
      }
    return {m, tree(sv, add)};
  }
  __device__ static float scale(Params p, Local l) {
    return exp2_fast((l.m - p.m) * kLog2e) * p.inv_s;
  }
};

struct LogSoftmax : SoftmaxStat {
  __device__ static Params params(Stat a, float, float) { return {a.m + logf(a.s), 0.0f}; }
  __device__ static float apply(float x, Params p, float, float) { return x - p.m; }
};

// (n, mean, M2), merged pairwise (Chan et al.). A thread folds each group of its values at once:
// their mean, then the squares around it (two passes over registers, one division); one value
// at a time it updates them (Welford: a division per value, only for a streamed row's tail).
struct LayerNorm : RowTraits {
  struct Stat {
    float n, mean, m2;
  };
  using Local = Stat;
  struct Params {
    float mean, rstd;
  };
  static constexpr bool kWritesRow = true;
  static constexpr bool kFoldsCached = true;
  __device__ static Stat init() { return {0.0f, 0.0f, 0.0f}; }
  __device__ static Local local_init() { return init(); }
  __device__ static void local_add(Local& a, float x) {
    a.n += 1.0f;
    const float d = x - a.mean;
    a.mean += __fdividef(d, a.n);
    a.m2 += d * (x - a.mean);
  }
  template <int N, int V>
  __device__ static Local fold(const float (&x)[N][V], int n) {
    if (n == 0) return init();
    const float count = float(n * V), mean = __fdividef(fold_lanes(x, n, 0.0f, same, add), count);
    return {count, mean,
            fold_lanes(
                x, n, 0.0f, [mean](float v) { return square(v - mean); }, add)};
  }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static Stat merge(Stat a, Stat b) {
    // An empty side returns the other whole: d * d would overflow to inf for |mean| past
    // ~1.8e19, and inf * 0 is NaN.
    if (b.n == 0.0f) return a;
    if (a.n == 0.0f) return b;
    const float n = a.n + b.n;
    const float d = b.mean - a.mean,
                f = __fdividef(b.n, n);  // not a full division: ~17 merges per row
    return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
  }
  __device__ static Params params(Stat a, float, float eps) {
    return {a.mean, rsqrtf(quotient(a.m2, a.n) + eps)};
  }
  __device__ static float apply(float x, Params p, float w, float b) {
    return (x - p.mean) * p.rstd * w + b;
  }
};

// var and std: layer_norm's statistic, finished as M2 / max(0, n - correction) (the kernel's
// scalar after the prologue's is the correction: 0 / 0 is NaN, M2 / 0 inf, as torch gives).
struct Var : LayerNorm {
  static constexpr bool kWritesRow = false;
  __device__ static float finish(Stat a, float, float correction) {
    return quotient(a.m2, fmaxf(a.n - correction, 0.0f));
  }
};

struct Std : Var {
  __device__ static float finish(Stat a, float n, float correction) {
    return sqrtf(Var::finish(a, n, correction));
  }
};

struct RmsNorm : RowTraits {
  struct Stat {
    float ss;
  };
  using Local = Stat;
  struct Params {
    float rstd;
  };
  static constexpr bool kWritesRow = true;
  __device__ static Stat init() { return {0.0f}; }
  __device__ static Local local_init() { return init(); }
  __device__ static void local_add(Local& a, float x) { a.ss += x * x; }
  static constexpr bool kFoldsCached = true;
  template <int N, int V>
  __device__ static Local fold(const float (&x)[N][V], int n) {
    return {fold_lanes(x, n, 0.0f, square, add)};
  }
  __device__ static Stat to_stat(Local a) { return a; }
  __device__ static Stat merge(Stat a, Stat b) { return {a.ss + b.ss}; }
  __device__ static Params params(Stat a, float n, float eps) {
    return {rsqrtf(quotient(a.ss, n) + eps)};
  }
  __device__ static float apply(float x, Params p, float w, float b) { return x * p.rstd * w + b; }
};

}  // namespace row
}  // namespace kiln
