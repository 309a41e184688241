// The kernels of bench/trace/gn_stats_probe.py (a probe, not one of kiln's templates): GroupNorm
// statistics of few, long groups over f16 channels_last x, then the map y = silu(x * scale +
// shift). C (channels), G (groups) and ROWS (pixel rows a block) come as -D options; nvcc
// compiles it too: nvcc -arch=sm_90 -cubin -DC=320 -DG=32 -DROWS=16 gn_stats_probe.cu
#include <cuda_fp16.h>
#ifndef C
#define C 320
#endif
#ifndef G
#define G 32
#endif
#ifndef ROWS
#define ROWS 16
#endif
#define COLS (C / 8)
#define BLOCK (COLS * ROWS)
#define CPG (C / G)

__device__ __forceinline__ void unpack(uint4 v, float (&f)[8]) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = __half22float2(h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

// grid (parts, N); x [N, HW, C] f16; parts [N, parts, C] float2 (sums of x - K and of its
// square, K = the image's first pixel); tickets [N] (only grow); scale, shift [N, C] f32.
extern "C" __global__ void __launch_bounds__(BLOCK) gn_stats(
    const uint4* __restrict__ x, const __half* __restrict__ gamma,
    const __half* __restrict__ beta, float2* __restrict__ parts, unsigned* tickets,
    float* __restrict__ scale, float* __restrict__ shift, int hw, float eps) {
  __shared__ float2 red[ROWS][C];
  __shared__ bool last;
  float* mean_c = &red[0][0].x;  // the last block's, once red is read
  float* m2_c = mean_c + C;
  const int n = blockIdx.y, part = blockIdx.x, nparts = gridDim.x;
  const int col = threadIdx.x % COLS, row = threadIdx.x / COLS;
  const int span = (hw + nparts - 1) / nparts, lo = part * span;
  const int hi = min(hw, lo + span);
  const uint4* img = x + (long long)n * hw * COLS;
  float k[8], s1[8], s2[8];
  unpack(__ldg(img + col), k);
#pragma unroll
  for (int i = 0; i < 8; ++i) s1[i] = s2[i] = 0.0f;
  int p = lo + row;
  for (; p + 3 * ROWS < hi; p += 4 * ROWS) {  // four loads in flight a thread
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = __ldg(img + (long long)(p + u * ROWS) * COLS + col);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      float f[8];
      unpack(v[u], f);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float d = f[i] - k[i];
        s1[i] += d;
        s2[i] = fmaf(d, d, s2[i]);
      }
    }
  }
  for (; p < hi; p += ROWS) {
    float f[8];
    unpack(__ldg(img + (long long)p * COLS + col), f);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float d = f[i] - k[i];
      s1[i] += d;
      s2[i] = fmaf(d, d, s2[i]);
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) red[row][col * 8 + i] = make_float2(s1[i], s2[i]);
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    float2 t = red[0][c];
#pragma unroll
    for (int r = 1; r < ROWS; ++r) t.x += red[r][c].x, t.y += red[r][c].y;
    parts[((long long)n * nparts + part) * C + c] = t;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = (atomicAdd(tickets + n, 1u) + 1) % nparts == 0;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const float inv = 1.0f / float(hw);
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    float a = 0.0f, b = 0.0f;
    for (int q = 0; q < nparts; ++q) {
      const float2 t = __ldcg(parts + ((long long)n * nparts + q) * C + c);
      a += t.x, b += t.y;
    }
    const float kc = __half2float(reinterpret_cast<const __half*>(img)[c]);
    mean_c[c] = kc + a * inv;
    m2_c[c] = fmaxf(b - a * a * inv, 0.0f);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    const int g0 = c / CPG * CPG;
    float mg = 0.0f;
    for (int j = 0; j < CPG; ++j) mg += mean_c[g0 + j];
    mg /= float(CPG);
    float m2 = 0.0f;
    for (int j = 0; j < CPG; ++j) {
      const float d = mean_c[g0 + j] - mg;
      m2 += m2_c[g0 + j] + float(hw) * d * d;
    }
    const float rstd = rsqrtf(m2 / (float(hw) * CPG) + eps);
    const float s = rstd * __half2float(gamma[c]);
    scale[n * C + c] = s;
    shift[n * C + c] = __half2float(beta[c]) - mg * s;
  }
}

// y = silu(x * scale + shift), a 16-byte pack a thread per step.
extern "C" __global__ void __launch_bounds__(256) gn_map(
    const uint4* __restrict__ x, const float* __restrict__ scale,
    const float* __restrict__ shift, uint4* __restrict__ y, int hw, long long packs) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < packs; i += 256ll * gridDim.x) {
    const unsigned u = unsigned(i);  // packs < 2^31
    const int col = int(u % COLS);
    const int n = int(u / (unsigned(hw) * COLS));
    float f[8];
    unpack(__ldg(x + i), f);
    const float4* sc = reinterpret_cast<const float4*>(scale + n * C + col * 8);
    const float4* sh = reinterpret_cast<const float4*>(shift + n * C + col * 8);
    const float4 a0 = __ldg(sc), a1 = __ldg(sc + 1), b0 = __ldg(sh), b1 = __ldg(sh + 1);
    const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
    uint4 out;
    __half2* o = reinterpret_cast<__half2*>(&out);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float v0 = fmaf(f[2 * j], a[2 * j], b[2 * j]);
      float v1 = fmaf(f[2 * j + 1], a[2 * j + 1], b[2 * j + 1]);
      v0 = __fdividef(v0, 1.0f + __expf(-v0));
      v1 = __fdividef(v1, 1.0f + __expf(-v1));
      o[j] = __floats2half2_rn(v0, v1);
    }
    y[i] = out;
  }
}
