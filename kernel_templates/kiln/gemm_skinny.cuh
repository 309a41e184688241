#pragma once
// The GEMM template for few rows (M <= 32): C = A (M x K) * B (K x N) with f32 FMA on CUDA
// cores, a product as wide as a matrix-vector one, bound by reading B. A block computes BN
// columns of MR rows (blocks along x take the column tiles, then the next MR rows) over a range
// of K. With B contiguous along N, lanes take BN / 32 columns each and the 8 warps split the range;
// otherwise lanes split K and each warp takes BN / 8 columns at once. Loads go in batches, all
// issued before the first is used: the product is bound by their latency. Partial sums meet in
// shared memory in a fixed order. With Split > 1 (sm_90 and later) the Split blocks of a cluster
// along z split K and sum their tiles through distributed shared memory in rank order. Then the
// epilogue of gemm.cuh per element. Deterministic; f32 sums of f32 products (f16 and bf16
// operands converted on load).

#include <kiln/gemm.cuh>

namespace kiln::gemm {

template <class T, class Epi, bool Bias, int MR, int Split, bool NContiguous, int BN>
__global__ void __launch_bounds__(256, 1)
    gemm_skinny(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args) {
  constexpr int kWarps = 8, kA = Epi::Outputs::size, kB = kA + 1;
  constexpr int kPerWarp = BN / kWarps;  // columns a warp takes at once (lanes along K)
  constexpr int kPerLane = BN / 32;      // columns a lane takes (lanes along N)
  static_assert(MR >= 1 && MR <= 8, "at most 8 rows a block");
  static_assert(BN % kWarps == 0 && BN % Split == 0 && (!NContiguous || BN == 32 || BN == 64),
                "columns");
  __shared__ float part[NContiguous ? kWarps : 1][MR][BN];
  __shared__ float tile[MR][BN];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int M = args.m, N = args.n, K = args.k;
  const int col_tiles = (N + BN - 1) / BN;
  const int n0 = int(blockIdx.x) % col_tiles * BN, m0 = int(blockIdx.x) / col_tiles * MR;
  const int per = (K + Split - 1) / Split;
  const int k0 = Split > 1 ? int(blockIdx.z) * per : 0;
  const int k1 = min(K, k0 + per);
  const long long ra = args.row[kA], ca = args.col[kA], rb = args.row[kB], cb = args.col[kB];
  wait_for_previous_grid();
  allow_next_grid();

  for (long long b = blockIdx.y; b < args.batches; b += gridDim.y) {
    long long bi[kBatchDims];
    batch_index(args, b, bi);
    const T* A = static_cast<const T*>(args.p[kA]) + batch_offset(args, kA, bi);
    const T* B = static_cast<const T*>(args.p[kB]) + batch_offset(args, kB, bi);
    // Rows past M and columns past N read the last one (their sums are never written): every
    // load is unpredicated, and a batch of them is issued before the first is used.
    const T* row[MR];
#pragma unroll
    for (int m = 0; m < MR; ++m) row[m] = A + min(m0 + m, M - 1) * ra;
    if constexpr (NContiguous) {
      // Lanes along the columns, warps along K, U rows of K a batch.
      constexpr int U = MR * kPerLane == 1 ? 32 : MR * kPerLane == 2 ? 16 : MR <= 4 ? 8 : 2;
      const T* col[kPerLane];
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) col[j] = B + min(n0 + lane + 32 * j, N - 1) * cb;
      float acc[MR][kPerLane] = {};
      auto step = [&](const float(&av)[MR], const float(&bv)[kPerLane]) {
#pragma unroll
        for (int m = 0; m < MR; ++m)
#pragma unroll
          for (int j = 0; j < kPerLane; ++j) acc[m][j] = fmaf(av[m], bv[j], acc[m][j]);
      };
      int k = k0 + warp;
      for (; k + (U - 1) * kWarps < k1; k += U * kWarps) {
        float av[U][MR], bv[U][kPerLane];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const long long kk = k + u * kWarps;
#pragma unroll
          for (int j = 0; j < kPerLane; ++j) bv[u][j] = to_float(col[j][kk * rb]);
#pragma unroll
          for (int m = 0; m < MR; ++m) av[u][m] = to_float(row[m][kk * ca]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) step(av[u], bv[u]);
      }
      for (; k < k1; k += kWarps) {
        float av[MR], bv[kPerLane];
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) bv[j] = to_float(col[j][k * rb]);
#pragma unroll
        for (int m = 0; m < MR; ++m) av[m] = to_float(row[m][k * ca]);
        step(av, bv);
      }
#pragma unroll
      for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int j = 0; j < kPerLane; ++j) part[warp][m][lane + 32 * j] = acc[m][j];
    } else {
      // Lanes along K (U values of K a batch), the warp's columns at once; lanes' sums meet by
      // a fixed butterfly.
      constexpr int U = MR * kPerWarp == 1 ? 8 : MR * kPerWarp >= 16 ? 2 : 4;
      const int c0 = warp * kPerWarp;
      const T* col[kPerWarp];
#pragma unroll
      for (int c = 0; c < kPerWarp; ++c) col[c] = B + min(n0 + c0 + c, N - 1) * cb;
      float acc[kPerWarp][MR] = {};
      auto step = [&](const float(&av)[MR], const float(&bv)[kPerWarp]) {
#pragma unroll
        for (int c = 0; c < kPerWarp; ++c)
#pragma unroll
          for (int m = 0; m < MR; ++m) acc[c][m] = fmaf(av[m], bv[c], acc[c][m]);
      };
      int k = k0 + lane;
      for (; k + (U - 1) * 32 < k1; k += U * 32) {
        float av[U][MR], bv[U][kPerWarp];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const long long kk = k + u * 32;
#pragma unroll
          for (int m = 0; m < MR; ++m) av[u][m] = to_float(row[m][kk * ca]);
#pragma unroll
          for (int c = 0; c < kPerWarp; ++c) bv[u][c] = to_float(col[c][kk * rb]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) step(av[u], bv[u]);
      }
      for (; k < k1; k += 32) {
        float av[MR], bv[kPerWarp];
#pragma unroll
        for (int m = 0; m < MR; ++m) av[m] = to_float(row[m][k * ca]);
#pragma unroll
        for (int c = 0; c < kPerWarp; ++c) bv[c] = to_float(col[c][k * rb]);
        step(av, bv);
      }
#pragma unroll
      for (int c = 0; c < kPerWarp; ++c)
#pragma unroll
        for (int m = 0; m < MR; ++m) {
#pragma unroll
          for (int o = 16; o > 0; o >>= 1) acc[c][m] += __shfl_xor_sync(0xffffffffu, acc[c][m], o);
          if (lane == 0) part[0][m][c0 + c] = acc[c][m];
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < MR * BN; e += 256) {
      const int m = e / BN, c = e % BN;
      float v = part[0][m][c];
      if constexpr (NContiguous)
#pragma unroll
        for (int w = 1; w < kWarps; ++w) v += part[w][m][c];
      tile[m][c] = v;
    }
    split_barrier<Split, true>();
    // This block's share of the columns, summed over the cluster in rank order.
    constexpr int kShare = BN / Split;
    const int s0 = Split > 1 ? int(blockIdx.z) * kShare : 0;
    for (int e = threadIdx.x; e < MR * kShare; e += 256) {
      const int m = e / kShare, c = s0 + e % kShare;
      if (m0 + m >= M || n0 + c >= N) continue;
      const float v[1] = {tile_sum<Split>(&tile[0][0], m * BN + c)};
      epilogue_at<T, Epi, Bias, 1>(args, bi, m0 + m, n0 + c, v);
    }
    split_barrier<Split, false>();
  }
}

}  // namespace kiln::gemm
