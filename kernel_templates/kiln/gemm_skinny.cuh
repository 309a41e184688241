#pragma once
// The GEMM template for a few rows (M <= MR, at most 8): C = A (M x K) * B (K x N) with f32 FMA
// on CUDA cores, a product as wide as a matrix-vector one, bound by reading B. A block computes
// BN = 64 columns of every row over a range of K; 8 warps split that range (B contiguous along N:
// lanes along the columns, warps along K) or the columns (B contiguous along K, or neither:
// lanes along K, a warp per column at a time); partial sums meet in shared memory in a fixed
// order. With Split > 1 (sm_90 and later) the Split blocks of a cluster along z split K and sum
// their tiles through distributed shared memory in rank order. Then the epilogue of gemm.cuh per
// element. Deterministic; f32 sums of f32 products (f16 and bf16 operands converted on load).

#include <kiln/gemm.cuh>

namespace kiln::gemm {

template <class T, class Epi, bool Bias, int MR, int Split, bool NContiguous>
__global__ void __launch_bounds__(256)
    gemm_skinny(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args) {
  constexpr int BN = 64, kWarps = 8, kA = Epi::Outputs::size, kB = kA + 1;
  static_assert(MR >= 1 && MR <= 8, "at most 8 rows");
  __shared__ float part[kWarps][MR][BN];
  __shared__ float tile[MR][BN];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int M = args.m, N = args.n, K = args.k, n0 = blockIdx.x * BN;
  const int per = (K + Split - 1) / Split;
  const int k0 = Split > 1 ? int(blockIdx.z) * per : 0;
  const int k1 = min(K, k0 + per);
  const long long ra = args.row[kA], ca = args.col[kA], rb = args.row[kB], cb = args.col[kB];

  for (long long b = blockIdx.y; b < args.batches; b += gridDim.y) {
    long long bi[kBatchDims];
    batch_index(args, b, bi);
    const T* A = static_cast<const T*>(args.p[kA]) + batch_offset(args, kA, bi);
    const T* B = static_cast<const T*>(args.p[kB]) + batch_offset(args, kB, bi);
    if constexpr (NContiguous) {
      // Lanes along the columns (two each), warps along K.
      float acc[MR][2] = {};
      // Unrolled so that a warp has many loads in flight: few warps run, each bound by latency.
#pragma unroll 8
      for (int k = k0 + warp; k < k1; k += kWarps) {
        float bv[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int n = n0 + lane + 32 * j;
          bv[j] = n < N ? to_float(B[k * rb + n * cb]) : 0.0f;
        }
#pragma unroll
        for (int m = 0; m < MR; ++m) {
          const float av = m < M ? to_float(A[m * ra + k * ca]) : 0.0f;
          acc[m][0] = fmaf(av, bv[0], acc[m][0]);
          acc[m][1] = fmaf(av, bv[1], acc[m][1]);
        }
      }
#pragma unroll
      for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int j = 0; j < 2; ++j) part[warp][m][lane + 32 * j] = acc[m][j];
    } else {
      // Lanes along K, a warp per column at a time; lanes' sums meet by a fixed butterfly.
      for (int c = warp; c < BN; c += kWarps) {
        const int n = n0 + c;
        float acc[MR] = {};
        if (n < N)
#pragma unroll 8
          for (int k = k0 + lane; k < k1; k += 32) {
            const float bv = to_float(B[k * rb + n * cb]);
#pragma unroll
            for (int m = 0; m < MR; ++m)
              acc[m] = fmaf(m < M ? to_float(A[m * ra + k * ca]) : 0.0f, bv, acc[m]);
          }
#pragma unroll
        for (int m = 0; m < MR; ++m) {
#pragma unroll
          for (int o = 16; o > 0; o >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
          if (lane == 0) part[0][m][c] = acc[m];
        }
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
    const int c0 = Split > 1 ? int(blockIdx.z) * kShare : 0;
    for (int e = threadIdx.x; e < MR * kShare; e += 256) {
      const int m = e / kShare, c = c0 + e % kShare;
      if (m >= M || n0 + c >= N) continue;
      epilogue_at<T, Epi, Bias>(args, bi, m, n0 + c, tile_sum<Split>(&tile[0][0], m * BN + c));
    }
    split_barrier<Split, false>();
  }
}

}  // namespace kiln::gemm
