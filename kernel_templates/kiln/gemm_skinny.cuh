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

constexpr int kSkinnyWarps = 8;

/// Values of K one batch of loads covers (a batch is issued before its first value is used),
/// where a lane sums `values` products per value of K (its rows times its columns): with lanes
/// along N (rows: the block's) and with lanes along K.
__host__ __device__ constexpr int skinny_batch_along_n(int rows, int values) {
  return values == 1 ? 32 : values == 2 ? 16 : rows <= 4 ? 8 : 2;
}
__host__ __device__ constexpr int skinny_batch_along_k(int values) {
  return values == 1 ? 8 : values >= 16 ? 2 : 4;
}

/// With B contiguous along N: the block's sums over K range [k0, k1) of rows `row` of A times
/// columns n0.. of B, lanes along the columns (BN / 32 each), warps along K, U values of K a
/// batch; each warp's sums into part[warp].
/// Note: the kernel declares the registers this works in (col, acc, a_batch, b_batch, a_one,
/// b_one), in this order after its own: the order of a kernel's arrays steers the compiler's
/// register allocation, and this order keeps the code as it was when this was the kernel's.
template <class T, int MR, int BN, int U>
__device__ __forceinline__ void skinny_lanes_along_n(
    const T* (&col)[BN / 32], float (&acc)[MR][BN / 32], float (&a_batch)[U][MR],
    float (&b_batch)[U][BN / 32], float (&a_one)[MR], float (&b_one)[BN / 32],
    float (&part)[kSkinnyWarps][MR][BN], const T* const (&row)[MR], const T* B, int n0, int N,
    long long ca, long long rb, long long cb, int k0, int k1, int lane, int warp) {
  constexpr int kWarps = kSkinnyWarps, kPerLane = BN / 32;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) col[j] = B + min(n0 + lane + 32 * j, N - 1) * cb;
  auto step = [&](const float(&av)[MR], const float(&bv)[kPerLane]) {
#pragma unroll
    for (int m = 0; m < MR; ++m)
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) acc[m][j] = fmaf(av[m], bv[j], acc[m][j]);
  };
  int k = k0 + warp;
  for (; k + (U - 1) * kWarps < k1; k += U * kWarps) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long kk = k + u * kWarps;
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) b_batch[u][j] = to_float(col[j][kk * rb]);
#pragma unroll
      for (int m = 0; m < MR; ++m) a_batch[u][m] = to_float(row[m][kk * ca]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) step(a_batch[u], b_batch[u]);
  }
  for (; k < k1; k += kWarps) {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) b_one[j] = to_float(col[j][k * rb]);
#pragma unroll
    for (int m = 0; m < MR; ++m) a_one[m] = to_float(row[m][k * ca]);
    step(a_one, b_one);
  }
#pragma unroll
  for (int m = 0; m < MR; ++m)
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) part[warp][m][lane + 32 * j] = acc[m][j];
}

/// With B strided along N: the same sums, lanes along K (U values of K a batch), each warp
/// taking its BN / 8 columns at once (registers from the kernel: see skinny_lanes_along_n);
/// lanes' sums meet by a fixed butterfly into part.
template <class T, int MR, int BN, int U>
__device__ __forceinline__ void skinny_lanes_along_k(
    const T* (&col)[BN / kSkinnyWarps], float (&acc)[BN / kSkinnyWarps][MR],
    float (&a_batch)[U][MR], float (&b_batch)[U][BN / kSkinnyWarps], float (&a_one)[MR],
    float (&b_one)[BN / kSkinnyWarps], float (&part)[MR][BN], const T* const (&row)[MR], const T* B,
    int n0, int N, long long ca, long long rb, long long cb, int k0, int k1, int lane, int warp) {
  constexpr int kPerWarp = BN / kSkinnyWarps;
  const int c0 = warp * kPerWarp;
#pragma unroll
  for (int c = 0; c < kPerWarp; ++c) col[c] = B + min(n0 + c0 + c, N - 1) * cb;
  auto step = [&](const float(&av)[MR], const float(&bv)[kPerWarp]) {
#pragma unroll
    for (int c = 0; c < kPerWarp; ++c)
#pragma unroll
      for (int m = 0; m < MR; ++m) acc[c][m] = fmaf(av[m], bv[c], acc[c][m]);
  };
  int k = k0 + lane;
  for (; k + (U - 1) * 32 < k1; k += U * 32) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long kk = k + u * 32;
#pragma unroll
      for (int m = 0; m < MR; ++m) a_batch[u][m] = to_float(row[m][kk * ca]);
#pragma unroll
      for (int c = 0; c < kPerWarp; ++c) b_batch[u][c] = to_float(col[c][kk * rb]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) step(a_batch[u], b_batch[u]);
  }
  for (; k < k1; k += 32) {
#pragma unroll
    for (int m = 0; m < MR; ++m) a_one[m] = to_float(row[m][k * ca]);
#pragma unroll
    for (int c = 0; c < kPerWarp; ++c) b_one[c] = to_float(col[c][k * rb]);
    step(a_one, b_one);
  }
#pragma unroll
  for (int c = 0; c < kPerWarp; ++c)
#pragma unroll
    for (int m = 0; m < MR; ++m) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc[c][m] += __shfl_xor_sync(0xffffffffu, acc[c][m], o);
      if (lane == 0) part[m][c0 + c] = acc[c][m];
    }
}

/// The parts' sum (over the warps with B contiguous along N) into `tile`, then this block's share
/// of the columns, summed over the cluster in rank order, through the epilogue.
template <class T, class Epi, bool Bias, int MR, int Split, bool NContiguous, int BN, int Parts,
          class Arg>
__device__ __forceinline__ void skinny_epilogue(const Arg& args, const long long (&bi)[kBatchDims],
                                                const float (&part)[Parts][MR][BN],
                                                float (&tile)[MR][BN], int m0, int n0, int M,
                                                int N) {
  __syncthreads();
  for (int e = threadIdx.x; e < MR * BN; e += 256) {
    const int m = e / BN, c = e % BN;
    float v = part[0][m][c];
    if constexpr (NContiguous)
#pragma unroll
      for (int w = 1; w < kSkinnyWarps; ++w) v += part[w][m][c];
    tile[m][c] = v;
  }
  split_barrier<Split, true>();
  constexpr int kShare = BN / Split;
  const int s0 = Split > 1 ? int(blockIdx.z) * kShare : 0;
  const unsigned rank = split_rank<Split>();
  for (int e = threadIdx.x; e < MR * kShare; e += 256) {
    const int m = e / kShare, c = s0 + e % kShare;
    if (m0 + m >= M || n0 + c >= N) continue;
    float v[1];
    split_sum<Split>(&tile[0][0], m * BN + c, rank, v);
    epilogue_at<T, Epi, Bias, 1>(args, bi, m0 + m, n0 + c, v);
  }
  split_barrier<Split, false>();
}

template <class T, class Epi, bool Bias, int MR, int Split, bool NContiguous, int BN>
__global__ void __launch_bounds__(256, 1)
    gemm_skinny(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args) {
  constexpr int kWarps = kSkinnyWarps, kA = Epi::Outputs::size, kB = kA + 1;
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
    // The registers of the sums, declared here in the order that keeps the code (the helpers'
    // Note).
    if constexpr (NContiguous) {
      constexpr int kPerLane = BN / 32, U = skinny_batch_along_n(MR, MR * kPerLane);
      const T* col[kPerLane];
      float acc[MR][kPerLane] = {};
      float a_batch[U][MR], b_batch[U][kPerLane], a_one[MR], b_one[kPerLane];
      skinny_lanes_along_n<T, MR, BN, U>(col, acc, a_batch, b_batch, a_one, b_one, part, row, B, n0,
                                         N, ca, rb, cb, k0, k1, lane, warp);
    } else {
      constexpr int kPerWarp = BN / kWarps, U = skinny_batch_along_k(MR * kPerWarp);
      const T* col[kPerWarp];
      float acc[kPerWarp][MR] = {};
      float a_batch[U][MR], b_batch[U][kPerWarp], a_one[MR], b_one[kPerWarp];
      skinny_lanes_along_k<T, MR, BN, U>(col, acc, a_batch, b_batch, a_one, b_one, part[0], row, B,
                                         n0, N, ca, rb, cb, k0, k1, lane, warp);
    }
    skinny_epilogue<T, Epi, Bias, MR, Split, NContiguous, BN>(args, bi, part, tile, m0, n0, M, N);
  }
}

}  // namespace kiln::gemm
