#pragma once
// The GEMM template for sm_80 and later: C[b] = A[b] (M x K) * B[b] (K x N) on tensor cores
// (mma.sync) with f32 accumulators, through a fused epilogue, for any M, N, K and strides
// (kernel arguments: one kernel serves every shape of its layout class).
//
// A block computes a BM x BN tile of C with WM x WN warps, stepping along K by BK through a ring
// of Stages shared-memory tiles that cp.async fills ahead of the warps. Each operand's tile is
// stored with its contiguous dim along 16-byte chunks, chunk c of row r at c ^ (r & 7) so that
// ldmatrix and cp.async meet no bank conflicts (rows of 128 bytes or more). Layout classes of an
// operand (ALayout, BLayout):
//   0  K contiguous (a[m, k] row-major; b[n, k], linear's weight): cp.async, ldmatrix
//   1  M (N) contiguous (a transposed; b[k, n] row-major): cp.async, ldmatrix.trans
//   2  anything else (strides of odd element counts, misaligned views): element loads into a
//      K-contiguous tile; correct for every view, slower.
// Classes 0 and 1 need a 16-byte aligned view whose strides are multiples of 16 bytes; edges
// (M, N, K not multiples of the tile) load zeros.
//
// With Split > 1 (sm_90 and later), the Split blocks of a thread-block cluster along z each take
// a range of K and sum their accumulators through distributed shared memory, in rank order (a
// deterministic split-K for products too small in M and N to fill the GPU).
//
// f16 and bf16 use mma.m16n8k16. f32 uses mma.m16n8k8 on TF32: with Exact, each product is
// split as a = big + small and computed as small*big + big*small + big*big, within about 1e-6
// of the f32 product; without, one TF32 product (about 1e-3).
//
// The epilogue (gemm_epilogue.cuh), per V columns of C in range: v = acc (+ bias[col]);
// Epi::apply(x, s, y) with the epilogue's inputs in x and v after them; y to the outputs. The
// accumulators pass through shared memory (BM x (BN + 8) floats, in the ring's space) so that the
// epilogue walks rows. Slots of Args::p: Epi's outputs, a, b, the bias (if Bias), Epi's inputs.

#include <kiln/cluster.cuh>
#include <kiln/elementwise.cuh>
#include <kiln/gemm_config.cuh>
#include <kiln/grid_dependency.cuh>
#include <kiln/mma.cuh>

namespace kiln::gemm {

constexpr int kBatchDims = 4;

/// The kernel's one parameter. Strides in elements, per slot: along rows (M; for b, K), along
/// columns (N; for a, K) and along each batch dim; batch_ext the batch dims' extents.
template <int P, int S>
struct Args {
  void* p[P];
  float s[S > 0 ? S : 1];
  long long row[P];
  long long col[P];
  long long batch[P][kBatchDims];
  long long batch_ext[kBatchDims];
  long long batches;
  int m, n, k;
  int lo[P], hi[P];  ///< an output's columns of the product (a slice of them: QKV)
};

/// A tile of R rows of C 16-byte chunks, swizzled.
template <int R, int C>
struct Tile {
  static_assert(C >= 8 && (C & (C - 1)) == 0, "tile rows of 128 bytes or more, a power of two");
  static constexpr int bytes = R * C * 16;
  __device__ __forceinline__ static int at(int r, int c) {
    return r * C * 16 + ((c ^ (r & 7)) << 4);
  }
  /// The byte offset of element (r, e) of a row of T.
  template <class T>
  __device__ __forceinline__ static int element(int r, int e) {
    constexpr int per = 16 / int(sizeof(T));
    return at(r, e / per) + (e % per) * int(sizeof(T));
  }
};

/// One operand's tile: `Rows` (M or N) by BK, in layout class `Layout`.
template <class T, int Rows, int BK, int Layout>
struct OperandTile {
  static constexpr int kPer = 16 / int(sizeof(T));  // elements per chunk
  static constexpr bool kMajor = Layout != 1;       // K contiguous in shared memory
  using Smem = Tile<kMajor ? Rows : BK, (kMajor ? BK : Rows) / kPer>;
  static constexpr int bytes = Smem::bytes;

  /// Byte offset of element (i along M or N, kk along K).
  __device__ __forceinline__ static int element(int i, int kk) {
    return kMajor ? Smem::template element<T>(i, kk) : Smem::template element<T>(kk, i);
  }

  /// Fills `tile` with the operand's elements [i0, i0 + Rows) x [k0, k0 + BK), zeros outside
  /// extents (ext_i, ext_k); strides (si, sk) in elements from `base` (element (0, 0)).
  template <int Threads>
  __device__ __forceinline__ static void load(char* tile, const T* base, long long si, long long sk,
                                              int i0, int k0, int ext_i, int ext_k, int tid) {
    if constexpr (Layout == 2) {
      for (int e = tid; e < Rows * BK; e += Threads) {
        const int i = e / BK, kk = e % BK;
        const bool in = i0 + i < ext_i && k0 + kk < ext_k;
        const T v = in ? base[(i0 + i) * si + (k0 + kk) * sk] : T{};
        *reinterpret_cast<T*>(tile + element(i, kk)) = v;
      }
    } else {
      // Rows of the stored tile run along the strided dim, chunks along the contiguous one.
      constexpr int R = kMajor ? Rows : BK;
      constexpr int C = (kMajor ? BK : Rows) / kPer;
      const int s0 = kMajor ? i0 : k0, c0 = kMajor ? k0 : i0;
      const int s_left = (kMajor ? ext_i : ext_k) - s0, c_left = (kMajor ? ext_k : ext_i) - c0;
      const long long ss = kMajor ? si : sk;
      for (int e = tid; e < R * C; e += Threads) {
        const int r = e / C, c = e % C;
        const int left = c_left - c * kPer;
        const int n = r < s_left ? (left < 0 ? 0 : left > kPer ? kPer : left) : 0;
        const T* src = n > 0 ? base + (s0 + r) * ss + (c0 + c * kPer) : base;
        mma::cp_async16(tile + Smem::at(r, c), src, n * int(sizeof(T)));
      }
    }
  }
};

/// Fragments of one warp's k-step for 2-byte types (m16n8k16).
template <class T, int Layout>
struct Frag16 {
  /// A's 16x16 fragment at rows i..i+15, k..k+15.
  template <class Op>
  __device__ __forceinline__ static void a(unsigned (&r)[4], const char* tile, int i, int k,
                                           int lane) {
    const int j = lane >> 3, q = lane & 7;
    if constexpr (Layout != 1)
      mma::ldmatrix_x4(r, tile + Op::element(i + (lane & 15), k + (lane >> 4) * 8));
    else
      mma::ldmatrix_x4_trans(r, tile + Op::element(i + (j & 1) * 8, k + (j >> 1) * 8 + q));
  }
  /// B's fragments of two n8 tiles at columns i..i+15, k..k+15: r[0..1] the first, r[2..3] the
  /// second.
  template <class Op>
  __device__ __forceinline__ static void b(unsigned (&r)[4], const char* tile, int i, int k,
                                           int lane) {
    const int j = lane >> 3, q = lane & 7;
    if constexpr (Layout != 1)
      mma::ldmatrix_x4(r, tile + Op::element(i + (j >> 1) * 8 + q, k + (j & 1) * 8));
    else
      mma::ldmatrix_x4_trans(r, tile + Op::element(i + (j >> 1) * 8, k + (j & 1) * 8 + q));
  }
};

__device__ __forceinline__ float smem_f32(const char* tile, int off) {
  return *reinterpret_cast<const float*>(tile + off);
}

/// The index along each batch dim of batch `b` (the last dim the fastest); no 64-bit division
/// for a single batch.
template <int P, int S>
__device__ __forceinline__ void batch_index(const Args<P, S>& args, long long b,
                                            long long (&bi)[kBatchDims]) {
  if (args.batches == 1) {
#pragma unroll
    for (int d = 0; d < kBatchDims; ++d) bi[d] = 0;
    return;
  }
#pragma unroll
  for (int d = kBatchDims - 1; d >= 0; --d) {
    bi[d] = b % args.batch_ext[d];
    b /= args.batch_ext[d];
  }
}

/// Where slot `slot`'s batch `bi` starts, in elements.
template <int P, int S>
__device__ __forceinline__ long long batch_offset(const Args<P, S>& args, int slot,
                                                  const long long (&bi)[kBatchDims]) {
  long long off = 0;
#pragma unroll
  for (int d = 0; d < kBatchDims; ++d) off += bi[d] * args.batch[slot][d];
  return off;
}

/// An epilogue's per-column math, for a block that stages its per-column operands (gemm_sm90.cuh's
/// Columns): with a nested Columns (codegen::render_split_body), the `kStaged` values its apply
/// reads before the product, computed from the inputs once a column as they are staged (a batch
/// norm's scale and shift); without, the inputs as they are.
template <class Epi, class = void>
struct ColumnMath {
  static constexpr int kStaged = Epi::Inputs::size;
  __device__ __forceinline__ static void apply(const float* x, const float*, float* y) {
#pragma unroll
    for (int i = 0; i < kStaged; ++i) y[i] = x[i];
  }
};
template <class Epi>
struct ColumnMath<Epi, decltype(void(sizeof(typename Epi::Columns)))> {
  static constexpr int kStaged = Epi::staged;
  __device__ __forceinline__ static void apply(const float* x, const float* s, float* y) {
    Epi::Columns::apply(x, s, y);
  }
};

}  // namespace kiln::gemm

#include <kiln/gemm_epilogue.cuh>

namespace kiln::gemm {

/// Every thread of the block (Split 1) or of its cluster waits for the others, `Release`-ing
/// its shared-memory writes to the cluster's blocks.
template <int Split, bool Release>
__device__ __forceinline__ void split_barrier() {
  if constexpr (Split == 1) {
    __syncthreads();
  } else {
    if constexpr (Release)
      cluster_arrive_release();
    else
      cluster_arrive();
    cluster_wait();
  }
}

/// One warp's products over one stage: MI x NI accumulator tiles of 16 x 8.
template <class T, class OpA, class OpB, int ALayout, int BLayout, int BK, int MI, int NI,
          bool Exact>
__device__ __forceinline__ void stage_products(float (&acc)[MI][NI][4], const char* sa,
                                               const char* sb, int wm0, int wn0, int lane) {
  if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
        Frag16<T, ALayout>::template a<OpA>(af[mi], sa, wm0 + mi * 16, ks, lane);
#pragma unroll
      for (int nj = 0; nj < NI / 2; ++nj) {
        unsigned r[4];
        Frag16<T, BLayout>::template b<OpB>(r, sb, wn0 + nj * 16, ks, lane);
        bf[2 * nj][0] = r[0], bf[2 * nj][1] = r[1], bf[2 * nj + 1][0] = r[2],
               bf[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) mma::mma_16816<T>(acc[mi][ni], af[mi], bf[ni]);
    }
  } else {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 8) {
      unsigned ab[MI][4], as[MI][4], bb[NI][2], bs[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float v =
              smem_f32(sa, OpA::element(wm0 + mi * 16 + g + (q & 1) * 8, ks + t + (q >> 1) * 4));
          ab[mi][q] = mma::to_tf32(v);
          as[mi][q] = Exact ? mma::to_tf32(v - __uint_as_float(ab[mi][q])) : 0u;
        }
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const float v = smem_f32(sb, OpB::element(wn0 + ni * 8 + g, ks + t + q * 4));
          bb[ni][q] = mma::to_tf32(v);
          bs[ni][q] = Exact ? mma::to_tf32(v - __uint_as_float(bb[ni][q])) : 0u;
        }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          if constexpr (Exact) {
            mma::mma_1688_tf32(acc[mi][ni], as[mi], bb[ni]);
            mma::mma_1688_tf32(acc[mi][ni], ab[mi], bs[ni]);
          }
          mma::mma_1688_tf32(acc[mi][ni], ab[mi], bb[ni]);
        }
    }
  }
}

}  // namespace kiln::gemm

#include <kiln/gemm_kernel.cuh>
