#pragma once
// The convolution template for sm_80 and later: conv2d as an implicit GEMM on gemm.cuh's pieces
// (its cp.async ring, mma.sync products, split-K over a cluster and fused epilogue).
//
// Per group, C[m, n] = sum_k A[m, k] * B[k, n] where m is an output pixel (image, p, q) of the
// N x P x Q, n an output channel of the group and k = (r, s, c) a filter tap and an input channel
// of the group, c the fastest: A[m, k] = x[image, c, p*stride_h - pad_h + r*dil_h,
// q*stride_w - pad_w + s*dil_w] (zero outside x: the padding), B[k, n] = w[n, c, r, s]. Neither
// is materialized: each operand's tile is loaded from its tensor through its Window, the same
// arithmetic for both (the weight is a window of one pixel per output channel over an R x S
// "image"). Vec windows (the channels contiguous, 16-byte aligned, C a multiple of 16 bytes:
// channels_last memory) load 16-byte chunks by cp.async, zero-filled outside; others load
// element by element (NCHW memory, odd channel counts: correct, slower).
//
// The epilogue is gemm_epilogue.cuh's: each slot's batch dims are (group, image, p, q), the
// group from blockIdx.y, the rest from the tile's row; rows have no stride of their own.

#include <kiln/gemm.cuh>

namespace kiln::conv {

/// How an operand's rows and K index a 4-d tensor [image, c, h, w] (strides in elements): row i
/// is pixel (i / pq, i % pq / q, i % pq % q) of the output grid; k is (r, s, c) with c the
/// fastest, c < c_ext, s < taps_w.
struct Window {
  long long s_img, s_c, s_h, s_w;
  int pq, q;
  int h, w, c_ext, taps_w;
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

/// The kernel's one parameter: gemm.cuh's (slots, strides, M = N*P*Q, N = K / groups, K =
/// R*S*C / groups, batches = groups) and the windows of A (x) and B (w).
template <int P, int S>
struct Args {
  gemm::Args<P, S> g;
  Window a, b;
};

/// The first tensor row (y) and column (x) pixel i's window reads, and where its image starts.
struct Origin {
  long long at;
  int y, x;
};

__device__ __forceinline__ Origin origin_of(const Window& w, int i) {
  const int img = i / w.pq, pix = i % w.pq;
  return {img * w.s_img, pix / w.q * w.stride_h - w.pad_h, pix % w.q * w.stride_w - w.pad_w};
}

/// A K-contiguous tile of `Rows` rows by BK of an operand read through a Window (gemm.cuh's
/// layout class 0 in shared memory).
template <class T, int Rows, int BK, bool Vec, int Threads>
struct WindowTile {
  static constexpr int kPer = 16 / int(sizeof(T));
  static constexpr int kChunks = BK / kPer;  // 16-byte chunks per row
  using Smem = gemm::Tile<Rows, kChunks>;
  static constexpr int bytes = Smem::bytes;
  static_assert(Threads % kChunks == 0 && Rows * kChunks % Threads == 0,
                "each thread loads whole chunks of fixed rows");
  /// Rows a thread loads per tile (Vec): rows tid / kChunks + j * Threads / kChunks.
  static constexpr int kRows = Vec ? Rows * kChunks / Threads : 1;

  __device__ __forceinline__ static int element(int i, int kk) {
    return Smem::template element<T>(i, kk);
  }

  /// What a thread keeps of its rows for every tile of K: each one's origin (outside the grid:
  /// a y that no tap brings into the tensor).
  struct Rows_ {
    Origin o[kRows];
  };

  __device__ __forceinline__ static Rows_ rows_of(const Window& w, int i0, int ext_i, int tid) {
    Rows_ r;
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      const int i = i0 + tid / kChunks + j * (Threads / kChunks);
      r.o[j] = i < ext_i ? origin_of(w, i) : Origin{0, -(1 << 30), 0};
    }
    return r;
  }

  /// Where column k reads relative to a row's origin: its tap's offsets and its channel.
  struct Tap {
    int dy, dx, c;
  };

  __device__ __forceinline__ static Tap tap_of(const Window& w, int k) {
    const int t = k / w.c_ext;
    return {t / w.taps_w * w.dil_h, t % w.taps_w * w.dil_w, k - t * w.c_ext};
  }

  /// The element of the row at `o` and the column at `t`: its offset from `base`, or -1 outside
  /// the tensor.
  __device__ __forceinline__ static long long offset(const Window& w, const Origin& o,
                                                    const Tap& t) {
    const int y = o.y + t.dy, x = o.x + t.dx;
    if (y < 0 || y >= w.h || x < 0 || x >= w.w) return -1;
    return o.at + y * w.s_h + x * w.s_w + t.c * w.s_c;
  }

  /// Fills `tile` with rows [i0, i0 + Rows) x [k0, k0 + BK), zeros outside (ext_i, ext_k) and
  /// outside the tensor.
  __device__ __forceinline__ static void load(char* tile, const T* base, const Window& w,
                                              const Rows_& rows, int i0, int k0, int ext_i,
                                              int ext_k, int tid) {
    if constexpr (Vec) {
      // A chunk never straddles two taps: c_ext is a multiple of kPer. The thread's chunk is
      // one column of every row it loads: its tap is decomposed once.
      const int c = tid % kChunks, k = k0 + c * kPer;
      const Tap tap = tap_of(w, k);
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        const long long o = k < ext_k ? offset(w, rows.o[j], tap) : -1;
        mma::cp_async16(tile + Smem::at(tid / kChunks + j * (Threads / kChunks), c),
                        o >= 0 ? base + o : base, o >= 0 ? 16 : 0);
      }
    } else {
      for (int e = tid; e < Rows * BK; e += Threads) {
        const int i = e / BK, kk = e % BK;
        long long o = -1;
        if (i0 + i < ext_i && k0 + kk < ext_k)
          o = offset(w, origin_of(w, i0 + i), tap_of(w, k0 + kk));
        *reinterpret_cast<T*>(tile + element(i, kk)) = o >= 0 ? base[o] : T{};
      }
    }
  }
};

template <class T, class Epi, bool Bias, int BM, int BN, int BK, int WM, int WN, int Stages,
          bool VecA, bool VecB, bool Exact, int Split, int V>
__global__ void __launch_bounds__(WM* WN * 32)
    conv2d(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args) {
  constexpr int NO = Epi::Outputs::size;
  constexpr int kThreads = WM * WN * 32;
  constexpr int WTM = BM / WM, WTN = BN / WN;
  constexpr int MI = WTM / 16, NI = WTN / 8;
  static_assert(WTM % 16 == 0 && WTN % 16 == 0, "warp tiles are multiples of 16");
  static_assert(BK == gemm::config::stage_k(int(sizeof(T))), "BK is a 128-byte row of K");
  using OpA = WindowTile<T, BM, BK, VecA, kThreads>;
  using OpB = WindowTile<T, BN, BK, VecB, kThreads>;
  static_assert(OpA::bytes + OpB::bytes == gemm::config::mma_stage_bytes(BM, BN),
                "a stage of the ring is what gemm_config.cuh sizes");
  constexpr int kA = NO, kB = NO + 1;
  extern __shared__ __align__(128) char smem[];

  const gemm::Args<NO + 2 + Bias + Epi::Inputs::size, Epi::scalars>& g = args.g;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm0 = warp / WN * WTM, wn0 = warp % WN * WTN;
  const int M = g.m, N = g.n, K = g.k;
  int tm, tn;
  gemm::tile_of(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  int kt0, ktiles;
  gemm::split_range<Split, BK>(K, kt0, ktiles);
  const typename OpA::Rows_ rows_a = OpA::rows_of(args.a, m0, M, tid);
  const typename OpB::Rows_ rows_b = OpB::rows_of(args.b, n0, N, tid);
  wait_for_previous_grid();
  allow_next_grid();

  for (long long grp = blockIdx.y; grp < g.batches; grp += gridDim.y) {
    const T* A = static_cast<const T*>(g.p[kA]) + grp * g.batch[kA][0];
    const T* B = static_cast<const T*>(g.p[kB]) + grp * g.batch[kB][0];
    auto load = [&](char* st, int kt) {
      const int k0 = (kt0 + kt) * BK;
      OpA::load(st, A, args.a, rows_a, m0, k0, M, K, tid);
      OpB::load(st + OpA::bytes, B, args.b, rows_b, n0, k0, N, K, tid);
    };
    float acc[MI][NI][4];
    gemm::accumulate_over_k<T, OpA, OpB, 0, 0, BK, MI, NI, Exact, Stages>(acc, smem, load, ktiles,
                                                                          wm0, wn0, lane);
    const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
    gemm::epilogue_tile<BM, BN, MI, NI, Split, V, kThreads>(
        smem, acc, rows, cols, wm0, wn0, tid, lane, [&](int r, int c, const float(&v)[V]) {
          const int m = m0 + r, pix = m % args.a.pq;
          const long long bi[gemm::kBatchDims] = {grp, m / args.a.pq, pix / args.a.q,
                                                  pix % args.a.q};
          gemm::epilogue_at<T, Epi, Bias, V>(g, bi, 0, n0 + c, v, grp * N);
        });
  }
}

}  // namespace kiln::conv

#include <kiln/conv_depthwise.cuh>
#include <kiln/conv_sm90.cuh>
