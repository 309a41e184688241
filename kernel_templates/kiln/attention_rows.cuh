#pragma once
// Attention without tensor cores: a warp per query row, each lane holding D / 32 of its
// columns; a key's score is a warp-wide dot product, the softmax online in f32. It takes any
// strides (D not contiguous included) and any element type, f32 among them, computing in f32
// FMA throughout: the correct, slower path (attention.cuh is the fast one).

#include <kiln/attention_common.cuh>
#include <kiln/attention_epilogue.cuh>
#include <kiln/attention_prologue.cuh>

namespace kiln::attention {

template <class T, class M, class L, int D, bool Causal, bool BottomRight, int Mask, bool Lens,
          class Epi = void, class Pro = void>
__global__ void __launch_bounds__(config::kRowWarps * 32) attention_rows(const Params p) {
  constexpr int kPer = (D + 31) / 32;  // columns per lane
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * config::kRowWarps + (threadIdx.x >> 5);
  if (row >= (long long)p.batches * p.heads * p.sq) return;
  const int i = int(row % p.sq);
  const int bh = int(row / p.sq), b = bh / p.heads, h = bh % p.heads;
  const Pair r = locate<Lens, L, BottomRight>(p, b, h);
  const config::Strides &sq = p.s[config::kQ], &sk = p.s[config::kK], &sv = p.s[config::kV];
  const T* const q = reinterpret_cast<const T*>(p.ptr[1]) + r.off[config::kQ] + i * sq.row;
  const T* const k = reinterpret_cast<const T*>(p.ptr[2]) + r.off[config::kK];
  const T* const v = reinterpret_cast<const T*>(p.ptr[3]) + r.off[config::kV];

  float qv[kPer], acc[kPer];
  [[maybe_unused]] long long bq[config::kBatchDims] = {};
  if constexpr (HasPrologue<Pro>::value) batch_index(p, b, bq);
#pragma unroll
  for (int c = 0; c < kPer; ++c) {
    const int d = lane + 32 * c;
    if constexpr (HasPrologue<Pro>::value)
      qv[c] = d < D ? to_float(prologue_element<T, Pro, Epi>(p, bq, h, i, d)) * p.scale_log2 : 0.0f;
    else
      qv[c] = d < D ? to_float(q[d * sq.col]) * p.scale_log2 : 0.0f;
    acc[c] = 0.0f;
  }
  float mx = minus_infinity(), l = 0.0f;
  const int n_end = key_end<Causal>(r, i, 1);
#pragma unroll 1
  for (int j = 0; j < n_end; ++j) {
    float dot = 0.0f;
#pragma unroll
    for (int c = 0; c < kPer; ++c) {
      const int d = lane + 32 * c;
      if (d < D) dot = fmaf(qv[c], to_float(k[j * sk.row + d * sk.col]), dot);
    }
#pragma unroll
    for (int w = 16; w > 0; w >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, w);
    const float x = masked<Causal, Mask, M>(dot, p, r, i, j);
    const float m = fmaxf(mx, x);
    const float alpha = exp2_from<false>(mx, m), pr = exp2_from<false>(x, m);
    mx = m;
    l = l * alpha + pr;
#pragma unroll
    for (int c = 0; c < kPer; ++c) {
      const int d = lane + 32 * c;
      const float vv = d < D && pr != 0.0f ? to_float(v[j * sv.row + d * sv.col]) : 0.0f;
      acc[c] = fmaf(pr, vv, acc[c] * alpha);
    }
  }
  if (lane == 0 && p.ptr[config::kLsePointer] != 0) store_lse(p, r.off[config::kLse], i, mx, l);
  if (p.ptr[config::kOut] == 0) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  if constexpr (HasEpilogue<Epi>::value) {
    long long bi[config::kBatchDims];
    batch_index(p, b, bi);
#pragma unroll
    for (int c = 0; c < kPer; ++c) {
      const int d = lane + 32 * c;
      if (d < D) epilogue_element<Epi>(p, bi, h, i, d, acc[c] * inv);
    }
    return;
  }
  const config::Strides& so = p.s[config::kOut];
  T* const out = reinterpret_cast<T*>(p.ptr[0]) + r.off[config::kOut] + i * so.row;
#pragma unroll
  for (int c = 0; c < kPer; ++c) {
    const int d = lane + 32 * c;
    if (d < D) out[d * so.col] = from_float<T>(acc[c] * inv);
  }
}

}  // namespace kiln::attention
