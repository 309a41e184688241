// One leapfrog step of seed 001's geodesic flow (GFN) as a kiln template. The state s is [2, B, D]
// (positions x = s[0], velocities v = s[1]), the force f [B, D]; the Christoffel term is Gamma(v) =
// (v U)^2 W^T with U, W of shape [D, R]:
//   vh = v + dt/2 (f - Gamma(v));  x' = x + dt vh;  v' = vh + dt/2 (f - Gamma(vh)).
// T is the storage type (float, __half, __nv_bfloat16); the math is f32. gfn_leapfrog: a warp
// steps two tokens at a time, each lane holding D/32 of their elements, U and W staged in shared
// memory for the block's warps; gfn_leapfrog_small (few tokens): the warps of a block step two
// tokens, U and W read through L1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gfn {

// Where U[i][j] sits in shared memory: rows of R, each lane group's span of rows (hidden_sq)
// R words further on, so that the groups read different banks at once.
template <int D, int R>
__device__ inline int u_at(int i, int j) {
  return i * R + j + (i / (D / (32 / R))) * R;
}
template <int D, int R>
__host__ __device__ constexpr int u_words() {
  return D * R + 32;
}

// h = (v U)^2 for the warp's two tokens, from their v in `vs` ([2][D]), U[i][j] as u(i, j);
// lanes j < R of the first group hold h[t][j]: the other lane groups sum other parts of D.
template <int D, int R, class UAt>
__device__ inline float2 hidden_sq(const UAt& u, const float* vs, int lane) {
  constexpr int kGroups = 32 / R, kSpan = D / kGroups;
  const int j = lane % R, first = (lane / R) * kSpan;
  // Four partial sums per token: independent chains, so the FMA latency overlaps.
  float4 h0 = make_float4(0.f, 0.f, 0.f, 0.f), h1 = h0;
#pragma unroll 4
  for (int i = first; i < first + kSpan; i += 4) {
    const float4 a = *reinterpret_cast<const float4*>(vs + i);
    const float4 b = *reinterpret_cast<const float4*>(vs + D + i);
    const float u0 = u(i, j), u1 = u(i + 1, j), u2 = u(i + 2, j), u3 = u(i + 3, j);
    h0 = make_float4(fmaf(a.x, u0, h0.x), fmaf(a.y, u1, h0.y), fmaf(a.z, u2, h0.z),
                     fmaf(a.w, u3, h0.w));
    h1 = make_float4(fmaf(b.x, u0, h1.x), fmaf(b.y, u1, h1.y), fmaf(b.z, u2, h1.z),
                     fmaf(b.w, u3, h1.w));
  }
  float s0 = (h0.x + h0.y) + (h0.z + h0.w), s1 = (h1.x + h1.y) + (h1.z + h1.w);
#pragma unroll
  for (int o = R; o < 32; o <<= 1) {
    s0 += __shfl_xor_sync(0xffffffffu, s0, o);
    s1 += __shfl_xor_sync(0xffffffffu, s1, o);
  }
  return make_float2(s0 * s0, s1 * s1);
}

// g = Gamma(v) for the warp's two tokens: v in registers (element lane + 32 c of each token),
// `vs` and `hs` the warp's scratch ([2][D] and [R] float2), U[i][j] and W[i][j] as u and w.
template <int D, int R, class UAt, class WAt>
__device__ inline void christoffel(const UAt& u, const WAt& w, float* vs, float2* hs,
                                   const float (&v)[2][D / 32], float (&g)[2][D / 32], int lane) {
#pragma unroll
  for (int c = 0; c < D / 32; ++c) {
    vs[c * 32 + lane] = v[0][c];
    vs[D + c * 32 + lane] = v[1][c];
  }
  __syncwarp();
  const float2 h = hidden_sq<D, R>(u, vs, lane);
  if (lane < R) hs[lane] = h;
  __syncwarp();
#pragma unroll
  for (int c = 0; c < D / 32; ++c) g[0][c] = g[1][c] = 0.f;
  for (int j = 0; j < R; ++j) {
    const float2 hj = hs[j];
#pragma unroll
    for (int c = 0; c < D / 32; ++c) {
      const float wv = w(c * 32 + lane, j);
      g[0][c] = fmaf(hj.x, wv, g[0][c]);
      g[1][c] = fmaf(hj.y, wv, g[1][c]);
    }
  }
  __syncwarp();  // vs and hs are written again by the next call
}

// One leapfrog step of tokens 2 pair and 2 pair + 1 (if < B) by one warp.
template <class T, int D, int R, class UAt, class WAt>
__device__ inline void step_pair(const UAt& u, const WAt& w, float* vs, float2* hs, const T* s,
                                 const T* f, T* s_out, int B, long long pair, float dt, int lane) {
  const T *x = s, *v = s + (long long)B * D;
  T *x_out = s_out, *v_out = s_out + (long long)B * D;
  const float half_dt = 0.5f * dt;
  const long long t0 = 2 * pair;
  const bool second = t0 + 1 < B;
  const long long row[2] = {t0 * D, (second ? t0 + 1 : t0) * D};
  float vv[2][D / 32], ff[2][D / 32], g[2][D / 32];
#pragma unroll
  for (int t = 0; t < 2; ++t)
#pragma unroll
    for (int c = 0; c < D / 32; ++c) {
      vv[t][c] = float(v[row[t] + c * 32 + lane]);
      ff[t][c] = float(f[row[t] + c * 32 + lane]);
    }
  christoffel<D, R>(u, w, vs, hs, vv, g, lane);
#pragma unroll
  for (int t = 0; t < 2; ++t)
#pragma unroll
    for (int c = 0; c < D / 32; ++c) {
      vv[t][c] = fmaf(half_dt, ff[t][c] - g[t][c], vv[t][c]);  // vh
      if (t == 0 || second) {
        const long long i = row[t] + c * 32 + lane;
        x_out[i] = T(fmaf(dt, vv[t][c], float(x[i])));
      }
    }
  christoffel<D, R>(u, w, vs, hs, vv, g, lane);
#pragma unroll
  for (int t = 0; t < 2; ++t)
    if (t == 0 || second)
#pragma unroll
      for (int c = 0; c < D / 32; ++c)
        v_out[row[t] + c * 32 + lane] = T(fmaf(half_dt, ff[t][c] - g[t][c], vv[t][c]));
}

}  // namespace gfn

#define GFN_SHAPE_CHECK                                                                      \
  static_assert(D % 128 == 0 && R >= 1 && R <= 32 && 32 % R == 0 && (D / (32 / R)) % 4 == 0, \
                "D a multiple of 128, R a divisor of 32")

// Many tokens: WARPS warps a block, U and W staged in shared memory as f32 (W transposed) once
// per block, then each warp steps pairs of tokens.
template <class T, int D, int R, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    gfn_leapfrog(const T* s, const T* f, const T* U, const T* W, T* s_out, int B, int d, int r,
                 float dt) {
  GFN_SHAPE_CHECK;
  extern __shared__ float4 smem4[];
  float* Us = reinterpret_cast<float*>(smem4);  // [D][R], laid out by u_at
  float* Wt = Us + gfn::u_words<D, R>();        // [R][D]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* vs = Wt + R * D + warp * 2 * D;  // this warp's [2][D]
  float2* hs = reinterpret_cast<float2*>(Wt + R * D + WARPS * 2 * D) + warp * R;
#pragma unroll 8  // loads in flight together: U and W are read once per block
  for (int k = threadIdx.x; k < D * R; k += blockDim.x) {
    Us[gfn::u_at<D, R>(k / R, k % R)] = float(U[k]);
    Wt[(k % R) * D + k / R] = float(W[k]);
  }
  __syncthreads();
  const auto u = [&](int i, int j) { return Us[gfn::u_at<D, R>(i, j)]; };
  const auto w = [&](int i, int j) { return Wt[j * D + i]; };
  for (long long pair = (long long)blockIdx.x * WARPS + warp; 2 * pair < B;
       pair += (long long)gridDim.x * WARPS)
    gfn::step_pair<T, D, R>(u, w, vs, hs, s, f, s_out, B, pair, dt, lane);
}

// Few tokens: a block of WARPS warps per pair of tokens, each thread D/(32 WARPS) elements of
// each; the sums over D split between the warps (so each thread's chains are short), U and W
// read where they are (L1 keeps them), so that no block waits for a staged copy.
template <class T, int D, int R, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    gfn_leapfrog_small(const T* s, const T* f, const T* U, const T* W, T* s_out, int B, int d,
                       int r, float dt) {
  GFN_SHAPE_CHECK;
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
