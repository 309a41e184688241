#pragma once
// The statistics of the row template (rows.cuh). A Row has a per-thread accumulator (Local,
// local_init, local_add), the statistic it turns into (Stat, to_stat) that merges across
// threads, and for ops that write the row the per-row parameters of the output (params) and
// apply(x, params, weight, bias).

namespace kiln {
namespace row {

__device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }

/// Whether a Row folds a thread's cached values itself (Row::kFoldsCached; false if absent).
template <class R, class = void>
struct FoldsCached {
  static constexpr bool value = false;
};
template <class R>
struct FoldsCached<R, decltype(void(R::kFoldsCached))> {
  static constexpr bool value = R::kFoldsCached;
};

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
  // Rows in registers: a thread's values become exp(x - m) for its own max m (one exp per
  // element, no dependent update per element); pass 2 multiplies them by exp(m - row max) / sum.
  static constexpr bool kFoldsCached = true;
  template <int N, int V>
  __device__ static Local fold(float (&x)[N][V], int n) {
    float m = -inf();
#pragma unroll
    for (int it = 0; it < N; ++it)
#pragma unroll
      for (int i = 0; i < V; ++i)
        if (it < n) m = (x[it][i] > m || x[it][i] != x[it][i]) ? x[it][i] : m;  // NaN sticks
    float s = 0.0f;
#pragma unroll
    for (int it = 0; it < N; ++it)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float e = (it < n && m != -inf()) ? exp2f((x[it][i] - m) * kLog2e) : 0.0f;
        x[it][i] = e;
        s += e;
      }
    return {m, s};
  }
  __device__ static float scale(Params p, Local l) { return exp2f((l.m - p.m) * kLog2e) * p.inv_s; }
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

}  // namespace row
}  // namespace kiln
