#pragma once
// The GEMM template for sm_90a: one warp of a producer warpgroup loads tiles of A and B with TMA
// into a ring of Stages shared-memory stages (128-byte swizzled, as wgmma reads them); two
// consumer warpgroups each multiply 64 rows of the block's 128 x BN tile with wgmma, keeping one
// stage's products in flight and releasing the stage before it (full and empty mbarriers per
// stage). Then the epilogue of
// gemm_kernel.cuh: the accumulators through shared memory, Epi per V columns (gemm_epilogue.cuh).
//
// A is K-contiguous ([M, K] rows); B is K-contiguous (BTrans 0: [N, K], linear's weight) or
// N-contiguous (BTrans 1: [K, N]); f16 and bf16. Edges of M, N and K arrive as zeros from TMA.
// Parameters: the Args of gemm.cuh (pointers, scalars, strides: the epilogue's), then the
// tensor maps of A (box 64 x 128 rows) and B (box 64 x BN rows, or 64 x 64 per 64 columns).

#include <kiln/gemm.cuh>
#include <kiln/tma.cuh>
#include <kiln/wgmma.cuh>

namespace kiln::gemm {

template <class T, class Epi, bool Bias, int BN, int Stages, int BTrans, int V>
__global__ void __launch_bounds__(384, 1)
    gemm_sm90(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args,
              const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int BM = 128, BK = 64, kThreads = 384;
  constexpr int kTileA = BM * BK * 2, kTileB = BN * BK * 2, kStage = kTileA + kTileB;
  constexpr int kLd = BN + 8;
  static_assert(BN == 128 || BN == 256, "BN 128 or 256");
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + Stages * kStage);
  unsigned long long* empty = full + Stages;

  const int tid = threadIdx.x, group = tid / 128;
  const int M = args.m, N = args.n, K = args.k;
  int tm, tn;
  tile_of(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  const int ktiles = (K + BK - 1) / BK;
  if (tid == 0) {
    for (int s = 0; s < Stages; ++s) {
      tma::barrier_init(&full[s], 1);
      tma::barrier_init(&empty[s], 2);
    }
  }
  __syncthreads();

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
  if (group == 0) {
    if (tid == 0)
      for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % Stages;
        if (kt >= Stages) tma::barrier_wait(&empty[s], (kt / Stages - 1) & 1);
        tma::arrive_expect_bytes(&full[s], kStage);
        unsigned char* st = smem + s * kStage;
        tma::load_2d(st, &map_a, kt * BK, m0, &full[s]);
        if constexpr (BTrans == 0) {
          tma::load_2d(st + kTileA, &map_b, kt * BK, n0, &full[s]);
        } else {
#pragma unroll
          for (int j = 0; j < BN / 64; ++j)
            tma::load_2d(st + kTileA + j * 64 * BK * 2, &map_b, n0 + 64 * j, kt * BK, &full[s]);
        }
      }
  } else {
    const int c = group - 1;  // rows 64c.. of the tile
    for (int kt = 0; kt < ktiles; ++kt) {
      const int s = kt % Stages;
      tma::barrier_wait(&full[s], (kt / Stages) & 1);
      const unsigned char* st = smem + s * kStage;
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        const unsigned long long da = wgmma::descriptor(st + c * 64 * 128 + kk * 32, 16, 1024);
        const unsigned long long db =
            BTrans ? wgmma::descriptor(st + kTileA + kk * 16 * 128, 64 * BK * 2, 1024)
                   : wgmma::descriptor(st + kTileA + kk * 32, 16, 1024);
        wgmma::Wgmma<T, BN>::template run<BTrans>(acc, da, db, 1);
      }
      wgmma::commit();
      // One group stays in flight: the one before it is done, and its stage free.
      wgmma::wait<1>();
      if (kt > 0 && tid % 128 == 0) tma::arrive(&empty[(kt - 1) % Stages]);
    }
    wgmma::wait<0>();
  }
  __syncthreads();  // every product done and every copy landed: the ring is free

  float* tile = reinterpret_cast<float*>(smem);
  if (group > 0) {
    const int lane = tid & 31, warp = (tid / 32) % 4, g = lane >> 2, t = lane & 3;
    const int r = (group - 1) * 64 + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(tile + (r + 8 * h) * kLd + 8 * j + 2 * t) =
            make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
  }
  __syncthreads();
  const long long bi[kBatchDims] = {0, 0, 0, 0};
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  constexpr int kVecs = BN / V;  // a thread's V columns of a row at a time
#pragma unroll 1
  for (int e = tid; e < BM * kVecs; e += kThreads) {
    const int r = e / kVecs, col = e % kVecs * V;
    if (r >= rows || col >= cols) continue;
    float v[V];
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = tile[r * kLd + col + i];
    epilogue_at<T, Epi, Bias, V>(args, bi, m0 + r, n0 + col, v);
  }
#endif
}

}  // namespace kiln::gemm
