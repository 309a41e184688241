#pragma once
// The convolution template for sm_90a (included from conv.cuh): gemm_sm90.cuh's block (a
// producer warp loading a ring of stages by TMA, two consumer warpgroups on wgmma, the staged
// epilogue) with a producer of its own. Each stage is one filter tap (r, s) and 64 channels
// (128 bytes) from channel c0: A's 128 rows are the tile's 128 output pixels, one im2col copy of
// x ([N, H, W, C] memory) walking them from the tile's first, each read at the tap's offset, zeros
// outside x (the padding) and past the last image; B's BN rows are w[n, c0.., r, s] for the
// tile's output channels, a tiled copy of w as [K, R*S, C], zeros past C. K, as the block counts
// it, is R*S stages of ceil(C / 64) each: a stage's channels past C multiply zeros.
// Parameters: ConvSm90Args (gemm.cuh's Args with M = N*P*Q, N = K, K = R*S*ceil(C/64)*64, rows
// of each result-shaped slot one output pixel apart; the output grid and taps), then the im2col
// map of x, the tiled map of w (box 64 channels x 1 tap x BN outputs) and (Store) the output's
// map as gemm_sm90's: its N*P*Q pixels as rows (images one after another).

#include <kiln/gemm_sm90.cuh>

namespace kiln::conv {

/// What the producer needs to place a tile's copies: the output grid (pq pixels an image, q a
/// row), the window's strides and padding, the taps' dilation, the filter's width and the
/// 64-channel blocks of C.
struct Taps {
  int pq, q, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, taps_w, blocks;
};

template <int P, int S>
struct Sm90Args {
  gemm::Args<P, S> g;
  Taps taps;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// The producer (one thread): each of the block's tiles' stages, the ring's uses numbered on
/// from one tile to the next.
template <class R, int BN, int Stages>
__device__ __forceinline__ void produce_taps(const R& ring, const TensorMap* map_x,
                                             const TensorMap* map_w, const gemm::Work& w,
                                             const Taps& t) {
  int it = 0;
  for (int tile = blockIdx.x; tile < w.tiles_m * w.tiles_n; tile += gridDim.x) {
    int tm, tn;
    gemm::tile_of(tile, w.tiles_m, w.tiles_n, tm, tn);
    const int m0 = tm * R::kRows, img = m0 / t.pq, pix = m0 % t.pq;
    const int y0 = pix / t.q * t.stride_h - t.pad_h, x0 = pix % t.q * t.stride_w - t.pad_w;
    for (int kt = 0; kt < w.ktiles; ++kt, ++it) {
      const int s = it % Stages;
      if (it >= Stages) tma::barrier_wait(&ring.empty[s], (it / Stages - 1) & 1);
      tma::arrive_expect_bytes(&ring.full[s], R::kLoad);
      unsigned char* st = ring.stage(it);
      const int step = w.kt0 + kt, tap = step / t.blocks, c0 = step % t.blocks * R::kDepth;
      const int r = tap / t.taps_w, u = tap % t.taps_w;
      tma::load_im2col_4d(st, map_x, c0, x0, y0, img, (unsigned short)(u * t.dil_w),
                          (unsigned short)(r * t.dil_h), &ring.full[s]);
      tma::load_3d(st + R::kTileA, map_w, c0, tap, tn * BN, &ring.full[s]);
    }
  }
}
#endif

template <class T, class Epi, bool Bias, int BN, int Stages, int V, int Split, bool Store,
          bool Columns>
__global__ void __launch_bounds__(gemm::config::kWgmmaThreads, 1)
    conv2d_sm90(const Sm90Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args,
                const __grid_constant__ TensorMap map_x, const __grid_constant__ TensorMap map_w,
                const __grid_constant__ TensorMap map_y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(sizeof(T) == 2, "f16 or bf16");
  using R = gemm::Ring<T, BN, Stages, false>;
  gemm::sm90_block<T, Epi, Bias, BN, Stages, 0, V, false, Split, /*Images=*/true, Store, Columns>(
      args.g, &map_y, [&](const R& ring, const gemm::Work& w) {
        produce_taps<R, BN, Stages>(ring, &map_x, &map_w, w, args.taps);
      });
#endif
}

}  // namespace kiln::conv
