#pragma once
// The depthwise convolution template (included from conv.cuh): groups = C = K, x's channels
// contiguous. Each output element reads R*S inputs and as many weights, so the kernel is bound
// by memory and by converting and multiplying its inputs, not by matrix arithmetic: no tensor
// cores. A thread computes 16 bytes of channels (8 of f16 or bf16, 4 of f32) of a strip of
// kStrip output pixels along a row, 8 threads side by side cover 128 bytes of channels, and a
// block of 128 threads computes 16 strips of one tile of 8 * 16 bytes of channels
// (conv_config.cuh), whose weights it keeps in shared memory as f32. Per filter row, a thread
// loads and converts each input column its strip reads once (SW and DW, the steps along W, are
// template parameters, so that the columns are registers): (kStrip - 1) * SW + (S - 1) * DW + 1
// loads for kStrip * S products, where a pixel a thread would take S each.
// The epilogue is gemm_epilogue.cuh's: row m is output pixel m (every result-shaped slot steps
// its pixels by one row stride), column n is channel n.
// Parameters: DepthwiseArgs (gemm.cuh's Args with M = N*P*Q, N = C; then the geometry).

#include <kiln/conv_config.cuh>
#include <kiln/gemm.cuh>
#include <kiln/vec.cuh>

namespace kiln::conv {

/// x's and w's strides (elements), the output grid and the window's steps.
struct DepthwiseGeometry {
  long long xs_img, xs_h, xs_w;  ///< x's channels are contiguous
  long long ws_c, ws_r, ws_s;    ///< w[c, 0, r, s]
  int h, w, c, p, q, strips, stride_h, pad_h, pad_w, dil_h;  ///< strips: along a row
};

template <int P, int S>
struct DepthwiseArgs {
  gemm::Args<P, S> g;
  DepthwiseGeometry d;
};


/// A pack's values as f32: 16-bit ones a register's pair at a time (unpack2).
template <class T, int V>
__device__ __forceinline__ void pack_floats(const Pack<T, V>& v, float (&f)[V]) {
  if constexpr (sizeof(T) == 2) {
    const unsigned* w = reinterpret_cast<const unsigned*>(v.v);
#pragma unroll
    for (int i = 0; i < V / 2; ++i) unpack2<T>(w[i], f[2 * i], f[2 * i + 1]);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) f[e] = to_float(v.v[e]);
  }
}

template <class T, class Epi, bool Bias, int V, int R, int S, int SW, int DW>
__global__ void __launch_bounds__(depthwise::kThreads, 1)
    conv2d_depthwise(const DepthwiseArgs<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size,
                                         Epi::scalars> args) {
  using namespace depthwise;
  constexpr int NO = Epi::Outputs::size;
  constexpr int kVec = 16 / int(sizeof(T));  // channels a thread
  constexpr int kTile = kVec * kLanes;       // channels a block
  constexpr int kCols = (kStrip - 1) * SW + (S - 1) * DW + 1;
  static_assert(kVec % V == 0, "the epilogue's columns divide a thread's channels");
  __shared__ __align__(16) float taps[R * S][kTile];
  const auto& g = args.g;
  const DepthwiseGeometry& d = args.d;
  const int c0 = int(blockIdx.y) * kTile;
  wait_for_previous_grid();  // x and w may be the kernel before this one's results
  allow_next_grid();
  const T* w = static_cast<const T*>(g.p[NO + 1]);
  for (int e = threadIdx.x; e < R * S * kTile; e += kThreads) {
    const int tap = e / kTile, c = c0 + e % kTile;
    taps[tap][e % kTile] =
        c < d.c ? to_float(w[c * d.ws_c + tap / S * d.ws_r + tap % S * d.ws_s]) : 0.0f;
  }
  __syncthreads();
  const int lane = threadIdx.x % kLanes, c = c0 + lane * kVec;
  // This thread's strip: of row (img, p), its first pixel q0.
  const long long strip = (long long)blockIdx.x * kPixels + threadIdx.x / kLanes;
  if (c >= d.c || strip >= (long long)g.m / d.q * d.strips) return;
  const int row = int(strip / d.strips), q0 = int(strip % d.strips) * kStrip;
  const int img = row / d.p, p = row % d.p;
  const int y0 = p * d.stride_h - d.pad_h, x0 = q0 * SW - d.pad_w;
  const T* x = static_cast<const T*>(g.p[NO]) + c + img * d.xs_img;
  float acc[kStrip][kVec] = {};
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int y = y0 + r * d.dil_h;
    if (y < 0 || y >= d.h) continue;
    float in[kCols][kVec];
    const T* at = x + y * d.xs_h + x0 * d.xs_w;  // the row's first column, stepped along W
#pragma unroll
    for (int i = 0; i < kCols; ++i, at += d.xs_w) {
      const int xx = x0 + i;
      Pack<T, kVec> v = {};
      if (xx >= 0 && xx < d.w) v = load_pack<T, kVec>(at);
      pack_floats(v, in[i]);
    }
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const float* k = &taps[r * S + s][lane * kVec];
      float kv[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) kv[e] = k[e];
#pragma unroll
      for (int j = 0; j < kStrip; ++j)
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[j][e] += in[j * SW + s * DW][e] * kv[e];
    }
  }
  // Pixel m of image img: a slot's offset img * batch[slot][0] + m * row[slot].
  const long long bi[gemm::kBatchDims] = {img, 0, 0, 0};
#pragma unroll
  for (int j = 0; j < kStrip; ++j) {
    if (q0 + j >= d.q) break;
    const int m = p * d.q + q0 + j;
#pragma unroll
    for (int h = 0; h < kVec; h += V) {
      float v[V];
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = acc[j][h + i];
      gemm::epilogue_at<T, Epi, Bias, V>(g, bi, m, c + h, v);
    }
  }
}

}  // namespace kiln::conv
