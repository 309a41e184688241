#pragma once
// Global-to-shared copies of the attention kernels' tiles (attention.cuh, attention_decode.cuh):
// any rows of a tensor with bounds and D's padding, or whole K and V tiles in turn with an
// address add a 16-byte piece.

#include <kiln/attention_config.cuh>
#include <kiln/mma.cuh>

namespace kiln::attention {

/// Rows [r0, r0 + Rows) of a tensor (row stride `rs` elements, D contiguous) into a shared tile
/// of rows of `Ld` elements; rows from `valid` on and columns from D on are zeros.
template <class T, int D, int Rows, int Ld, int Threads>
__device__ __forceinline__ void load_tile(T* tile, const T* src, long long rs, int r0, int valid,
                                          int tid) {
  constexpr int kChunks = config::padded_d(D) / 8;  // 16 bytes each
#pragma unroll 2
  for (int c = tid; c < Rows * kChunks; c += Threads) {
    const int r = c / kChunks, ch = c % kChunks;
    const bool ok = r0 + r < valid && ch * 8 < D;
    const T* from = ok ? src + (long long)(r0 + r) * rs + ch * 8 : src;
    mma::cp_async16(tile + r * Ld + ch * 8, from, ok ? 16 : 0);
  }
}

/// Whether whole_rows applies: a row's 16-byte pieces divide the threads (D 16, 32, 64, 128,
/// 256) and a pass of them divides the tile's rows.
template <int D, int Rows, int Threads>
constexpr bool kWholeRows = config::padded_d(D) == D&& Threads % (config::padded_d(D) / 8) == 0 &&
                            Rows % (Threads / (config::padded_d(D) / 8)) == 0;

/// Rows [r0, r0 + Rows) of a tensor (row stride `rs` elements), every one within it, into a
/// shared tile (kWholeRows): each thread copies the same 16-byte piece of every (Threads /
/// pieces)-th row, an address add and a cp.async a piece. load_tile's bounds and index math
/// took about half the decode loop's instructions, and threads that issue slower than memory
/// delivers leave bandwidth unused. Nothing is kept between calls: the mma kernel's D 128
/// tiles have no register to spare.
template <class T, int D, int Rows, int Ld, int Threads>
__device__ __forceinline__ void whole_rows(T* tile, const T* src, long long rs, int r0, int tid) {
  constexpr int kPieces = config::padded_d(D) / 8, kRows = Threads / kPieces;
  const int row = tid / kPieces, piece = tid % kPieces;
  const unsigned to = mma::smem(tile) + unsigned((row * Ld + piece * 8) * sizeof(T));
  const char* from = reinterpret_cast<const char*>(src + (r0 + row) * rs + piece * 8);
  const long long pass = kRows * rs * (long long)sizeof(T);
#pragma unroll
  for (int i = 0; i < Rows / kRows; ++i, from += pass)
    mma::cp_async16_line(to + unsigned(i * kRows * Ld * sizeof(T)), from);
}

/// Keys [k0, k0 + BN) of k and v (row strides k_rs and v_rs) into `stage`, K then V, zeros past
/// `n_end`: by whole_rows where it applies and every key is within, else by load_tile.
template <class T, int D, int BN, int Ld, int Threads>
__device__ __forceinline__ void load_kv_tile(T* stage, const T* k, long long k_rs, const T* v,
                                             long long v_rs, int k0, int n_end, int tid) {
  if (kWholeRows<D, BN, Threads> && k0 + BN <= n_end) {
    whole_rows<T, D, BN, Ld, Threads>(stage, k, k_rs, k0, tid);
    whole_rows<T, D, BN, Ld, Threads>(stage + BN * Ld, v, v_rs, k0, tid);
    return;
  }
  load_tile<T, D, BN, Ld, Threads>(stage, k, k_rs, k0, n_end, tid);
  load_tile<T, D, BN, Ld, Threads>(stage + BN * Ld, v, v_rs, k0, n_end, tid);
}

}  // namespace kiln::attention
