// One leapfrog step of seed 001's geodesic flow (GFN) as a kiln template. The state s is [2, B, D]
// (positions x = s[0], velocities v = s[1]), the force f [B, D]; the Christoffel term is Gamma(v) =
// (v U)^2 W^T with U, W of shape [D, R]:
//   vh = v + dt/2 (f - Gamma(v));  x' = x + dt vh;  v' = vh + dt/2 (f - Gamma(vh)).
// T is the storage type (float, __half, __nv_bfloat16); the math is f32. gfn_leapfrog: a block
// steps 16 tokens with Gamma on tensor cores; gfn_leapfrog_small (few tokens): the warps of a
// block step two tokens on CUDA cores, U and W read through L1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "leapfrog_mma.cuh"

// Many tokens: a block of WD warps steps 16 tokens, each warp D / WD of their columns, Gamma on
// tensor cores (leapfrog_mma.cuh); the partial sums of h = v U over the warps' columns meet in
// shared memory. The second Gamma's h accumulates while the first's g is applied, group by group.
// v, then vh, wait in shared memory (each thread's own vectors, in lane order): held in
// registers, a warp's share of 16 tokens left too few for the products. 16 warps an SM (the
// register cap of __launch_bounds__) keep enough loads in flight; UNROLL groups at a time.
template <class T, int D, int R, int WD, int UNROLL>
__global__ void __launch_bounds__(WD * 32, 16 / WD)
    gfn_leapfrog(const T* s, const T* f, const T* U, const T* W, T* s_out, int B, int d, int r,
                 float dt) {
  using P = gfn::mma::Products<T, R>;
  using V = gfn::mma::Vec<T>;
  constexpr int E = V::E, NT = R / 8, DW = D / WD, G = DW / (4 * E);
  static_assert(R % 8 == 0 && R <= 32 && DW % (4 * E) == 0,
                "R a multiple of 8 up to 32, D of 4 E WD");
  extern __shared__ float4 smem[];  // [2][WD][32][NT] partial h, then [WD][G][2][E / 4][32] state
  auto red = reinterpret_cast<float4(*)[WD][32][NT]>(smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, q = lane / 4, t = lane % 4;
  const gfn::mma::Stash<E> stash{smem + 2 * WD * 32 * NT + warp * G * 2 * E / 4 * 32 + lane};
  const long long tok = 16ll * blockIdx.x + q;
  const bool ok[2] = {tok < B, tok + 8 < B};
  const int col0 = warp * DW + t * E;  // the thread's first column; group k adds 4 E k
  const auto at = [&](int row, int k) { return (tok + 8 * row) * D + col0 + 4 * E * k; };
  const T *x = s, *v = s + (long long)B * D;
  T *x_out = s_out, *v_out = s_out + (long long)B * D;
  const auto load = [&](const T* p, int row, int k, float(&y)[E]) {
    V::unpack(
        ok[row] ? __ldcs(reinterpret_cast<const uint4*>(p + at(row, k))) : make_uint4(0, 0, 0, 0),
        y);
  };
  const auto store = [&](T* p, int row, int k, const float(&y)[E]) {
    if (ok[row]) __stcs(reinterpret_cast<uint4*>(p + at(row, k)), V::pack(y));
  };
  const auto u_at = [&](int k) { return U + (col0 + 4 * E * k) * R + NT * q; };
  const float half_dt = 0.5f * dt;
  const auto kick = [&](int k, const typename P::HSq& hs, float(&y)[2][E]) {  // += dt/2 (f - g)
    const auto w_row = [&](int e) {
      return W + (warp * DW + 4 * E * k + (q / 2) * E + 2 * e + q % 2) * R + 2 * NT * t;
    };
    float g[2][E], fk[2][E];
    load(f, 0, k, fk[0]);
    load(f, 1, k, fk[1]);
    P::gamma(g, hs, w_row);
#pragma unroll
    for (int row = 0; row < 2; ++row)
#pragma unroll
      for (int i = 0; i < E; ++i) y[row][i] = fmaf(half_dt, fk[row][i] - g[row][i], y[row][i]);
  };
  float h[NT][4] = {}, h2[NT][4] = {};
#pragma unroll UNROLL
  for (int k = 0; k < G; ++k) {
    float vk[2][E];
    load(v, 0, k, vk[0]);
    load(v, 1, k, vk[1]);
    stash.put(k, vk);
    P::template hidden<true>(h, vk, u_at(k));
  }
  gfn::mma::sum_warps<WD, NT>(h, red[0], warp, lane);
  const typename P::HSq hs1 = P::squared(h);
#pragma unroll UNROLL
  for (int k = 0; k < G; ++k) {
    float vk[2][E], xk[E];
    stash.get(k, vk);
    kick(k, hs1, vk);  // vh; x' = x + dt vh
#pragma unroll
    for (int row = 0; row < 2; ++row) {
      load(x, row, k, xk);
#pragma unroll
      for (int i = 0; i < E; ++i) xk[i] = fmaf(dt, vk[row][i], xk[i]);
      store(x_out, row, k, xk);
    }
    stash.put(k, vk);
    P::template hidden<false>(h2, vk, u_at(k));
  }
  gfn::mma::sum_warps<WD, NT>(h2, red[1], warp, lane);
  const typename P::HSq hs2 = P::squared(h2);
#pragma unroll UNROLL
  for (int k = 0; k < G; ++k) {
    float vk[2][E];
    stash.get(k, vk);
    kick(k, hs2, vk);
#pragma unroll
    for (int row = 0; row < 2; ++row) store(v_out, row, k, vk[row]);
  }
}

// Few tokens: a block of WARPS warps per pair of tokens, each thread D/(32 WARPS) elements of
// each; the sums over D split between the warps (so each thread's chains are short), U and W
// read where they are (L1 keeps them), so that no block waits for a staged copy.
template <class T, int D, int R, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    gfn_leapfrog_small(const T* s, const T* f, const T* U, const T* W, T* s_out, int B, int d,
                       int r, float dt) {
  static_assert(D % 128 == 0 && R >= 1 && R <= 32 && 32 % R == 0 && (D / (32 / R)) % 4 == 0,
                "D a multiple of 128, R a divisor of 32");
  constexpr int N = WARPS * 32, E = D / N, kSpan = D / WARPS / (32 / R);
  static_assert(D % N == 0 && kSpan % 2 == 0, "D a multiple of the block's threads");
  __shared__ alignas(16) float vs[2 * D];
  __shared__ float2 part[WARPS][R];
  __shared__ float2 hs[R];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const long long t0 = 2ll * blockIdx.x;
  const bool second = t0 + 1 < B;
  const long long row[2] = {t0 * D, (second ? t0 + 1 : t0) * D};
  const T *x = s, *v = s + (long long)B * D;
  T *x_out = s_out, *v_out = s_out + (long long)B * D;
  float vv[2][E], ff[2][E], g[2][E];
#pragma unroll
  for (int t = 0; t < 2; ++t)
#pragma unroll
    for (int e = 0; e < E; ++e) {
      vv[t][e] = float(v[row[t] + e * N + tid]);
      ff[t][e] = float(f[row[t] + e * N + tid]);
    }
  const auto gamma = [&] {  // g = Gamma(vv)
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int e = 0; e < E; ++e) vs[t * D + e * N + tid] = vv[t][e];
    __syncthreads();
    const int j = lane % R, first = warp * (D / WARPS) + (lane / R) * kSpan;
    float2 h = make_float2(0.f, 0.f), k = h;  // two chains per token
#pragma unroll
    for (int i = first; i < first + kSpan; i += 2) {
      const float u0 = float(__ldg(U + i * R + j)), u1 = float(__ldg(U + (i + 1) * R + j));
      h = make_float2(fmaf(vs[i], u0, h.x), fmaf(vs[D + i], u0, h.y));
      k = make_float2(fmaf(vs[i + 1], u1, k.x), fmaf(vs[D + i + 1], u1, k.y));
    }
    h = make_float2(h.x + k.x, h.y + k.y);
#pragma unroll
    for (int o = R; o < 32; o <<= 1)
      h = make_float2(h.x + __shfl_xor_sync(0xffffffffu, h.x, o),
                      h.y + __shfl_xor_sync(0xffffffffu, h.y, o));
    if (lane < R) part[warp][lane] = h;
    __syncthreads();
    if (tid < R) {
      float2 a = part[0][tid];
#pragma unroll
      for (int w = 1; w < WARPS; ++w) a = make_float2(a.x + part[w][tid].x, a.y + part[w][tid].y);
      hs[tid] = make_float2(a.x * a.x, a.y * a.y);
    }
    __syncthreads();
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const T* wrow = W + (e * N + tid) * R;
      float a0 = 0.f, a1 = 0.f;
#pragma unroll
      for (int q = 0; q < R; ++q) {
        const float w = float(__ldg(wrow + q));
        a0 = fmaf(hs[q].x, w, a0);
        a1 = fmaf(hs[q].y, w, a1);
      }
      g[0][e] = a0;
      g[1][e] = a1;
    }
  };
  const float half_dt = 0.5f * dt;
  gamma();
#pragma unroll
  for (int t = 0; t < 2; ++t)
#pragma unroll
    for (int e = 0; e < E; ++e) {
      vv[t][e] = fmaf(half_dt, ff[t][e] - g[t][e], vv[t][e]);  // vh
      const long long i = row[t] + e * N + tid;
      if (t == 0 || second) x_out[i] = T(fmaf(dt, vv[t][e], float(x[i])));
    }
  gamma();
#pragma unroll
  for (int t = 0; t < 2; ++t)
    if (t == 0 || second)
#pragma unroll
      for (int e = 0; e < E; ++e)
        v_out[row[t] + e * N + tid] = T(fmaf(half_dt, ff[t][e] - g[t][e], vv[t][e]));
}
