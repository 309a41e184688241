#pragma once
// The register-level work of attention_sm90.cuh's consumer warpgroups on wgmma accumulator
// fragments (a thread holds rows g and g + 8 of its warp's 16, columns 8 j + 2 t and + 1 of each
// n8 step j): masking an edge tile, the online softmax in log2 units, the rescale of O and the
// packing of P as the A fragments of P V, and the output's store (directly, or through shared
// memory where the output's rows take whole 16-byte chunks).

#include <kiln/attention.cuh>
#include <kiln/attention_common.cuh>
#include <kiln/tma.cuh>

namespace kiln::attention::sm90 {

/// An edge tile's raw scores: -inf for keys past the batch's last or past the causal diagonal
/// of the thread's rows i0 and i0 + 8 (keys from c0: 8 j + 2 t). Only tiles that cross one take
/// this: on the others the per-element tests were half the softmax's instructions.
template <bool Causal, int BN>
__device__ __forceinline__ void mask_tile(float (&sc)[BN / 2], int skv, int diag, int i0, int c0) {
  // Against the element's key offset 8 j + (e & 1), a constant: the keys left, and the last key
  // each of the two rows sees.
  const int left = skv - c0, seen0 = i0 + diag - c0, seen1 = seen0 + 8;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = 8 * j + (e & 1);
      if (key >= left || (Causal && key > (e >> 1 ? seen1 : seen0)))
        sc[4 * j + e] = minus_infinity();
    }
}

/// The online softmax's first half over one tile of raw scores (a quad of lanes holds a row;
/// `scale` in log2 units, above 0, so the raw max is the scaled one's): each of the thread's two
/// rows' new max (raw), the scores replaced by their probabilities exp2(x scale - max scale), one
/// FFMA and one MUFU each, the sums updated; `alpha` what the output must be scaled by (outputs
/// are left alone: a product may still be adding to them). Maxima and sums run in `Chains`
/// chains a row: one warp a scheduler does this while the other group's products run, so a
/// single chain of 64 dependent adds would be its latency, not its issue, that sets the time.
template <int BN, int Chains>
__device__ __forceinline__ void softmax_tile(float (&sc)[BN / 2], float (&mx)[2], float (&l)[2],
                                             float (&alpha)[2], float scale) {
  static_assert(BN / 8 % Chains == 0, "n8 steps in whole chains");
  constexpr int kChains = Chains;
  float m[2][kChains], sum[2][kChains];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int c = 0; c < kChains; ++c) m[h][c] = mx[h], sum[h][c] = 0.0f;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      m[h][j % kChains] = fmaxf(m[h][j % kChains], fmaxf(sc[4 * j + 2 * h], sc[4 * j + 2 * h + 1]));
  float base[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float r = m[h][0];
#pragma unroll
    for (int c = 1; c < kChains; ++c) r = fmaxf(r, m[h][c]);
    r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, 1));
    r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, 2));
    base[h] = r == minus_infinity() ? 0.0f : r * scale;
    alpha[h] = mx[h] == minus_infinity() ? 0.0f : exp2_ftz(mx[h] * scale - base[h]);
    mx[h] = r;
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int h = e >> 1;
      const float pr = exp2_ftz(fmaf(sc[4 * j + e], scale, -base[h]));
      sc[4 * j + e] = pr;
      sum[h][j % kChains] += pr;
    }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float r = sum[h][0];
#pragma unroll
    for (int c = 1; c < kChains; ++c) r += sum[h][c];
    l[h] = l[h] * alpha[h] + r;
  }
}

/// The second half, once no product adds to the outputs: the outputs rescaled, the
/// probabilities packed as the A fragments of P V (keys 16 kk .. 16 kk + 15 are the n8 steps
/// 2 kk and 2 kk + 1: mma.sync's A fragment).
template <class T, int BN, int Dp>
__device__ __forceinline__ void rescale_and_pack(float (&o)[Dp / 2], unsigned (&pf)[BN / 16][4],
                                                 const float (&sc)[BN / 2],
                                                 const float (&alpha)[2]) {
  // Late in a row the max rarely moves: a warp whose 16 rows all kept theirs skips the FMULs.
  if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
    for (int j = 0; j < Dp / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[4 * j + e] *= alpha[e >> 1];
  }
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) pf[kk][i] = pack2<T>(sc[8 * kk + 2 * i], sc[8 * kk + 2 * i + 1]);
}

/// The thread's output rows i0 and i0 + 8, divided by their sums (0 for a row that saw no key);
/// columns from D on (the padding) and rows from Sq on are not written. Each pair of columns is
/// one 4-byte store where D is contiguous and the rows 4-byte aligned.
template <class T, int D, int Dp>
__device__ __forceinline__ void store_rows(T* out, const config::Strides& so, int sq, int i0,
                                           const float (&o)[Dp / 2], const float (&l)[2], int t) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float inv = inverse_row_sum(l[h]);
    const int i = i0 + 8 * h;
    if (i >= sq) continue;
    T* row = out + (long long)i * so.row;
    const bool pairs = so.col == 1 && (reinterpret_cast<unsigned long long>(row) & 3) == 0;
#pragma unroll
    for (int j = 0; j < Dp / 8; ++j) {
      const int col = 8 * j + 2 * t;
      if (col >= D) continue;
      const float a = o[4 * j + 2 * h] * inv, b = o[4 * j + 2 * h + 1] * inv;
      if (pairs) {
        *reinterpret_cast<unsigned*>(row + col) = pack2<T>(a, b);
      } else {
        row[(long long)col * so.col] = from_float<T>(a);
        row[(long long)(col + 1) * so.col] = from_float<T>(b);
      }
    }
  }
}

/// Whether an item's rows can be stored by store_staged: whole 16-byte chunks, contiguous along
/// D, each row 16-byte aligned.
template <class T, int D>
__device__ __forceinline__ bool staged_fits(const T* out, const config::Strides& so) {
  return D * int(sizeof(T)) % 16 == 0 && so.col == 1 && so.row * int(sizeof(T)) % 16 == 0 &&
         (reinterpret_cast<unsigned long long>(out) & 15) == 0;
}

/// Consumer group c's 64 output rows (row0 on; `tid` its thread, 0-127) divided by their sums,
/// through the group's own rows of its item's Q tile (`tile`: atoms of 64 columns, TileRows rows
/// each), which only its products, all done, read: each thread writes its pairs there (chunks
/// swizzled by the row, so that a warp's 8 rows take distinct banks), then the group stores
/// whole 16-byte chunks, a row's in consecutive lanes. Storing each pair from the fragments
/// (store_rows) took ~2 us an item, a fifth of an item's time at S 512: a warp's 4-byte stores
/// each touch 8 rows. Ends at the group's barrier, after which the tile may take another Q.
template <class T, int D, int Dp, int TileRows>
__device__ __forceinline__ void store_staged(unsigned tile, T* out, long long row_stride, int sq,
                                             int row0, const float (&o)[Dp / 2],
                                             const float (&l)[2], int c, int tid) {
  // Shared addresses (the block's base is aligned through an integer: to the compiler a pointer
  // from it is generic).
  const unsigned rows = tile + c * 64 * 128;
  const int lane = tid & 31;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float inv = inverse_row_sum(l[h]);
    const int r = tid / 32 * 16 + lane / 4 + 8 * h;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {  // the padding's columns (D to Dp) are not stored
      const unsigned at =
          rows + j / 8 * TileRows * 128 + r * 128 + ((j % 8) ^ (r % 8)) * 16 + 4 * (lane & 3);
      asm volatile("st.shared.b32 [%0], %1;" ::"r"(at),
                   "r"(pack2<T>(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv))
                   : "memory");
    }
  }
  asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");
  constexpr int kChunks = D / 8, kAll = 64 * kChunks;  // 16-byte chunks: a row's, the group's
#pragma unroll 4  // all at once: 4 bytes spilled at D 80 (causal, bottom-right)
  for (int i = 0; i < (kAll + 127) / 128; ++i) {
    const int k = tid + 128 * i, r = k / kChunks, q = k % kChunks;
    if (k >= kAll) break;
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(rows + q / 8 * TileRows * 128 + r * 128 + ((q % 8) ^ (r % 8)) * 16)
                 : "memory");
    if (row0 + r < sq) *reinterpret_cast<uint4*>(out + (row0 + r) * row_stride + q * 8) = v;
  }
  tma::fence_shared_async();  // the tile's next Q lands by TMA, after these writes
  asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");
}

}  // namespace kiln::attention::sm90
