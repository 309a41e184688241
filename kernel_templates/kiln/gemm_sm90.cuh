#pragma once
// The GEMM template for sm_90a: one warp of a producer warpgroup loads tiles of A and B with TMA
// into a ring of Stages shared-memory stages (128-byte swizzled, as wgmma reads them); two
// consumer warpgroups each multiply 64 rows of the block's 128 x BN tile with wgmma, keeping one
// stage's products in flight and releasing the stage before it (full and empty mbarriers per
// stage). Then the epilogue of
// gemm_kernel.cuh: the accumulators through shared memory, Epi per V columns (gemm_epilogue.cuh).
//
// A is K-contiguous ([M, K] rows); B is K-contiguous (BTrans 0: [N, K], linear's weight) or
// N-contiguous (BTrans 1: [K, N]); f16 and bf16, or f32 on TF32 with both K-contiguous. Exact
// (f32 to about 1e-6): three TF32 products per term, the consumers' main loop of
// gemm_sm90_exact.cuh. Edges of M, N and K arrive as zeros from TMA.
// Parameters: the Args of gemm.cuh (pointers, scalars, strides: the epilogue's), then the
// tensor maps of A (box 128 bytes of K x 128 rows) and B (128 bytes of K x BN rows, or of N x 64
// rows of K per 64 columns).

#include <kiln/gemm.cuh>
#include <kiln/gemm_sm90_exact.cuh>
#include <kiln/tma.cuh>
#include <kiln/wgmma.cuh>

namespace kiln::gemm {

template <class T, class Epi, bool Bias, int BN, int Stages, int BTrans, int V, bool Exact,
          int Split>
__global__ void __launch_bounds__(384, 1)
    gemm_sm90(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args,
              const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // A stage holds 128 bytes of K per row of A and B (64 f16/bf16, 32 f32), and for Exact B's rest.
  constexpr int BM = 128, BK = 128 / int(sizeof(T)), kThreads = 384;
  constexpr int kTileA = BM * 128, kTileB = BN * 128, kLoad = kTileA + kTileB;
  constexpr int kStage = Exact ? kLoad + kTileB : kLoad;  // Exact: B's rest after B
  static_assert(!Exact || (sizeof(T) == 4 && BTrans == 0 && BN == 128),
                "Exact: f32, both K-major, BN 128");
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
  // With Split > 1 the blocks of a cluster along z each take a range of K and sum their tiles
  // through distributed shared memory in rank order, as gemm_kernel.cuh's do.
  const int per = ((K + BK - 1) / BK + Split - 1) / Split;
  const int kt0 = Split > 1 ? int(blockIdx.z) * per : 0;
  const int ktiles = max(0, min((K + BK - 1) / BK - kt0, per));
  // Exact: an even number of stages (gemm_sm90_exact.cuh), the last maybe past K: all zeros.
  const int padded = Exact ? ktiles + (ktiles & 1) : ktiles;
  static_assert(Split >= 1 && BM % Split == 0, "a split of the tile's rows");
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
      for (int kt = 0; kt < padded; ++kt) {
        const int s = kt % Stages;
        if (kt >= Stages) tma::barrier_wait(&empty[s], (kt / Stages - 1) & 1);
        tma::arrive_expect_bytes(&full[s], kLoad);
        unsigned char* st = smem + s * kStage;
        const int k0 = kt < ktiles ? (kt0 + kt) * BK : (K + BK - 1) / BK * BK;
        tma::load_2d(st, &map_a, k0, m0, &full[s]);
        if constexpr (BTrans == 0) {
          tma::load_2d(st + kTileA, &map_b, k0, n0, &full[s]);
        } else {
#pragma unroll
          for (int j = 0; j < BN / 64; ++j)
            tma::load_2d(st + kTileA + j * 64 * BK * 2, &map_b, n0 + 64 * j, k0, &full[s]);
        }
      }
  } else {
    const int c = group - 1;  // rows 64c.. of the tile
    if constexpr (Exact) {
      exact_products<Stages, kStage, kTileA, kTileB>(acc, smem, full, empty, padded, c, tid);
    } else {
      for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % Stages;
        tma::barrier_wait(&full[s], (kt / Stages) & 1);
        const unsigned char* st = smem + s * kStage;
        wgmma::fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {  // 32 bytes of K each: k16 of f16/bf16, k8 of TF32
          const unsigned char* a = st + c * 64 * 128 + kk * 32;
          const unsigned char* b = BTrans ? st + kTileA + kk * 16 * 128 : st + kTileA + kk * 32;
          const unsigned long long da = wgmma::descriptor(a, 16, 1024);
          const unsigned long long db =
              BTrans ? wgmma::descriptor(b, 64 * BK * 2, 1024) : wgmma::descriptor(b, 16, 1024);
          wgmma::Wgmma<T, BN>::template run<BTrans>(acc, da, db, 1);
        }
        wgmma::commit();
        // One group stays in flight: the one before it is done, and its stage free.
        wgmma::wait<1>();
        if (kt > 0 && tid % 128 == 0) tma::arrive(&empty[(kt - 1) % Stages]);
      }
      wgmma::wait<0>();
    }
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
  split_barrier<Split, true>();
  // This block's share of the tile's rows (all of them unless split), V columns a thread.
  const long long bi[kBatchDims] = {0, 0, 0, 0};
  const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
  const int r0 = Split > 1 ? int(blockIdx.z) * (BM / Split) : 0;
  constexpr int kVecs = BN / V;
#pragma unroll 1
  for (int e = tid; e < BM / Split * kVecs; e += kThreads) {
    const int r = r0 + e / kVecs, col = e % kVecs * V;
    if (r >= rows || col >= cols) continue;
    float v[V];
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = tile_sum<Split>(tile, r * kLd + col + i);
    epilogue_at<T, Epi, Bias, V>(args, bi, m0 + r, n0 + col, v);
  }
  split_barrier<Split, false>();  // every block's tile is read before any block exits
#endif
}

}  // namespace kiln::gemm
