// Seed 000's Gaussian field as kiln templates. Points x [B, 3]; Gaussians P [N, 10], each
// (mu0, mu1, mu2, L00, L10, L11, L20, L21, L22, w) with L lower triangular, its diagonal positive
// (or, with LOGDIAG, the log of it); the field
//   f(x_b) = sum_n w_n exp(-|z_bn|^2 / 2),  z_bn = L_n^-1 (x_b - mu_n)  (forward substitution).
// Backward, given gf = dloss/df: with e = exp(-|z|^2 / 2), c = -gf w e and u = L^-T (c z),
//   dx_b = sum_n u,  dmu_n = -sum_b u,  dL_n = -sum_b u z^T (lower triangle),  dw_n = sum_b gf e.
// Each kernel owns rows of one side (a thread each; two in the forward) and runs over slice
// blockIdx.y of the other side (S slices), staged in shared memory; it writes that slice's
// partial sums, which kiln's sum over axis 0 adds in a fixed order: no atomics, the same bits
// every run.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gauss {

// A Gaussian as the loops read it: the diagonal as reciprocals.
struct alignas(16) G {
  float4 a;  // mu0, mu1, mu2, 1/L00
  float4 b;  // L10, 1/L11, L20, L21
  float4 c;  // 1/L22, w, L00, L11 (the diagonal itself: for LOGDIAG's chain rule)
  float d;   // L22
};

template <int LOGDIAG>
__device__ inline G load(const float* p) {
  const float l00 = LOGDIAG ? __expf(p[3]) : p[3], l11 = LOGDIAG ? __expf(p[5]) : p[5],
              l22 = LOGDIAG ? __expf(p[8]) : p[8];
  G g;
  g.a = make_float4(p[0], p[1], p[2], 1.f / l00);
  g.b = make_float4(p[4], 1.f / l11, p[6], p[7]);
  g.c = make_float4(1.f / l22, p[9], l00, l11);
  g.d = l22;
  return g;
}

__device__ inline G nothing() {  // w = 0: pads a slice
  G g;
  g.a = make_float4(0.f, 0.f, 0.f, 1.f);
  g.b = make_float4(0.f, 1.f, 0.f, 0.f);
  g.c = make_float4(1.f, 0.f, 1.f, 1.f);
  g.d = 1.f;
  return g;
}

struct Z {
  float z0, z1, z2, e;
};

__device__ inline Z solve(const G& g, float x0, float x1, float x2) {
  Z z;
  z.z0 = (x0 - g.a.x) * g.a.w;
  z.z1 = (x1 - g.a.y - g.b.x * z.z0) * g.b.y;
  z.z2 = (x2 - g.a.z - g.b.z * z.z0 - g.b.w * z.z1) * g.c.x;
  z.e = __expf(-0.5f * (z.z0 * z.z0 + z.z1 * z.z1 + z.z2 * z.z2));
  return z;
}

// u = L^-T (s z): back substitution.
__device__ inline float3 back(const G& g, const Z& z, float s) {
  float3 u;
  u.z = s * z.z2 * g.c.x;
  u.y = (s * z.z1 - g.b.w * u.z) * g.b.y;
  u.x = (s * z.z0 - g.b.x * u.y - g.b.z * u.z) * g.a.w;
  return u;
}

// The forward's Gaussian: its mean scaled by kScale = sqrt(log2(e) / 2), as the points are, so
// that exp(-|z|^2 / 2) is exp2(-|z'|^2) with z' = kScale z; 40 bytes, three shared loads.
constexpr float kScale = 0.84932180028801904f;

struct alignas(16) F {
  float4 a;  // kScale mu0, kScale mu1, kScale mu2, 1/L00
  float4 b;  // L10, 1/L11, L20, L21
  float2 c;  // 1/L22, w
};

template <int LOGDIAG>
__device__ inline F load_forward(const float* p) {
  const G g = load<LOGDIAG>(p);
  F f;
  f.a = make_float4(kScale * g.a.x, kScale * g.a.y, kScale * g.a.z, g.a.w);
  f.b = g.b;
  f.c = make_float2(g.c.x, g.c.y);
  return f;
}

__device__ inline F nothing_forward() {  // w = 0: pads a slice
  F f;
  f.a = make_float4(0.f, 0.f, 0.f, 1.f);
  f.b = make_float4(0.f, 1.f, 0.f, 0.f);
  f.c = make_float2(1.f, 0.f);
  return f;
}

// w exp(-|z|^2 / 2) at a scaled point (x0, x1, x2) = kScale x.
__device__ inline float term(const F& g, float x0, float x1, float x2) {
  const float z0 = (x0 - g.a.x) * g.a.w;
  const float z1 = (x1 - g.a.y - g.b.x * z0) * g.b.y;
  const float z2 = (x2 - g.a.z - g.b.z * z0 - g.b.w * z1) * g.c.x;
  const float q = -z0 * z0 - z1 * z1 - z2 * z2;
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(q));  // underflows to 0, as exp does
  return g.c.y * e;
}

// The Gaussians of slice `s` ([lo, hi)) in chunks of BLOCK through `gs`, each staged as
// load(its 10 parameters) (or `pad` past the slice) and handed to `fn`.
template <int BLOCK, class Q, class Load, class Fn>
__device__ inline void over_gaussians(const float* P, int N, int S, Q* gs, const Q& pad, Load load,
                                      Fn fn) {
  const int per = (N + S - 1) / S, lo = blockIdx.y * per, hi = min(N, lo + per);
  for (int c = lo; c < hi; c += BLOCK) {
    __syncthreads();
    const int n = c + threadIdx.x;
    gs[threadIdx.x] = n < hi ? load(P + 10ll * n) : pad;
    __syncthreads();
    const int m = min(BLOCK, hi - c);
#pragma unroll 4
    for (int k = 0; k < m; ++k) {
      const Q q = gs[k];  // whole, in vector loads, before any use
      fn(q);
    }
  }
}

}  // namespace gauss

// part[s, b] = sum over slice s of the Gaussians of w exp(-|z|^2 / 2). A thread owns POINTS
// points (BLOCK apart), so each Gaussian read from shared memory serves all of them.
template <class T, int BLOCK, int LOGDIAG, int POINTS>
__global__ void __launch_bounds__(BLOCK)
    gauss_field(const T* x, const T* P, T* part, int B, int N, int S) {
  static_assert(sizeof(T) == 4, "f32 points and Gaussians");
  __shared__ gauss::F gs[BLOCK];
  const int first = blockIdx.x * BLOCK * POINTS + threadIdx.x;
  float px[POINTS][3], acc[POINTS];
#pragma unroll
  for (int i = 0; i < POINTS; ++i) {
    const int b = first + i * BLOCK;
#pragma unroll
    for (int j = 0; j < 3; ++j) px[i][j] = b < B ? gauss::kScale * x[3 * b + j] : 0.f;
    acc[i] = 0.f;
  }
  gauss::over_gaussians<BLOCK>(
      P, N, S, gs, gauss::nothing_forward(),
      [](const float* p) { return gauss::load_forward<LOGDIAG>(p); },
      [&](const gauss::F& g) {
#pragma unroll
        for (int i = 0; i < POINTS; ++i) acc[i] += gauss::term(g, px[i][0], px[i][1], px[i][2]);
      });
#pragma unroll
  for (int i = 0; i < POINTS; ++i)
    if (first + i * BLOCK < B) part[(long long)blockIdx.y * B + first + i * BLOCK] = acc[i];
}

// part[s, b, :] = dx_b over slice s of the Gaussians.
template <class T, int BLOCK, int LOGDIAG>
__global__ void __launch_bounds__(BLOCK)
    gauss_grad_x(const T* x, const T* P, const T* gf, T* part, int B, int N, int S) {
  static_assert(sizeof(T) == 4, "f32 points and Gaussians");
  __shared__ gauss::G gs[BLOCK];
  const int b = blockIdx.x * BLOCK + threadIdx.x;
  const bool in = b < B;
  const float x0 = in ? x[3 * b] : 0.f, x1 = in ? x[3 * b + 1] : 0.f, x2 = in ? x[3 * b + 2] : 0.f;
  const float g = in ? gf[b] : 0.f;
  float3 acc = make_float3(0.f, 0.f, 0.f);
  gauss::over_gaussians<BLOCK>(
      P, N, S, gs, gauss::nothing(), [](const float* p) { return gauss::load<LOGDIAG>(p); },
      [&](const gauss::G& q) {
        const gauss::Z z = gauss::solve(q, x0, x1, x2);
        const float3 u = gauss::back(q, z, -g * q.c.y * z.e);
        acc.x += u.x;
        acc.y += u.y;
        acc.z += u.z;
      });
  if (!in) return;
  T* out = part + ((long long)blockIdx.y * B + b) * 3;
  out[0] = acc.x;
  out[1] = acc.y;
  out[2] = acc.z;
}

// part[s, n, :] = (dmu, dL00, dL10, dL11, dL20, dL21, dL22, dw) of Gaussian n over slice s of the
// points; with LOGDIAG the diagonal's entries are d(log L_ii) = dL_ii L_ii.
template <class T, int BLOCK, int LOGDIAG>
__global__ void __launch_bounds__(BLOCK)
    gauss_grad_p(const T* x, const T* P, const T* gf, T* part, int B, int N, int S) {
  static_assert(sizeof(T) == 4, "f32 points and Gaussians");
  __shared__ float4 pts[BLOCK];  // x0, x1, x2, gf
  const int n = blockIdx.x * BLOCK + threadIdx.x;
  const bool in = n < N;
  const gauss::G q = in ? gauss::load<LOGDIAG>(P + 10ll * n) : gauss::nothing();
  float acc[10] = {};
  const int per = (B + S - 1) / S, lo = blockIdx.y * per, hi = min(B, lo + per);
  for (int c = lo; c < hi; c += BLOCK) {
    __syncthreads();
    const int b = c + threadIdx.x;
    pts[threadIdx.x] = b < hi ? make_float4(x[3 * b], x[3 * b + 1], x[3 * b + 2], gf[b])
                              : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    const int m = min(BLOCK, hi - c);
    for (int k = 0; k < m; ++k) {
      const float4 p = pts[k];
      const gauss::Z z = gauss::solve(q, p.x, p.y, p.z);
      const float ge = p.w * z.e;
      const float3 u = gauss::back(q, z, -ge * q.c.y);
      acc[0] -= u.x;
      acc[1] -= u.y;
      acc[2] -= u.z;
      acc[3] -= u.x * z.z0;
      acc[4] -= u.y * z.z0;
      acc[5] -= u.y * z.z1;
      acc[6] -= u.z * z.z0;
      acc[7] -= u.z * z.z1;
      acc[8] -= u.z * z.z2;
      acc[9] += ge;
    }
  }
  if (!in) return;
  if (LOGDIAG) {
    acc[3] *= q.c.z;
    acc[5] *= q.c.w;
    acc[8] *= q.d;
  }
  T* out = part + ((long long)blockIdx.y * N + n) * 10;
#pragma unroll
  for (int i = 0; i < 10; ++i) out[i] = acc[i];
}
