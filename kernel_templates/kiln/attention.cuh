#pragma once
// Attention on sm_80 tensor cores (mma.sync m16n8k16, f16 or bf16 operands, f32 accumulators),
// in the manner of FlashAttention-2: a block takes BM query rows of one (batch, head), a warp WM
// of them (16 or 32: tiles of 16 rows that share each K and V fragment read); Q's fragments stay
// in registers (read from its tile at each step for D above 128 or two tiles a warp);
// tiles of BN keys and values stream through a ring of Stages shared-memory stages that cp.async
// fills ahead; the scores of a tile live in registers, the softmax runs online with f32 row
// statistics in log2 units, and the probabilities feed the P V product straight from registers.
// Causal blocks stop at the last tile their rows see; only tiles that cross the diagonal, the
// batch's last key or a mask are masked element by element.
// D is any multiple of 8 up to 256: it is padded to 16 in shared memory with zeros (cp.async
// zero-fills), so the padding adds nothing to a dot product and its output columns are dropped.

#include <kiln/attention_common.cuh>
#include <kiln/attention_copies.cuh>
#include <kiln/attention_epilogue.cuh>
#include <kiln/attention_prologue.cuh>
#include <kiln/attention_rows.cuh>
#include <kiln/mma.cuh>

namespace kiln::attention {

/// B fragments of key tiles nt and nt + 1 (8 keys each) at k-step ks of the K tile `kt`.
template <int Ld, class T>
__device__ __forceinline__ void key_fragments(unsigned (&b0)[2], unsigned (&b1)[2], const T* kt,
                                              int nt, int ks, int lane) {
  unsigned r[4];
  mma::ldmatrix_x4(
      r, kt + (nt * 8 + (lane >> 4) * 8 + (lane & 7)) * Ld + ks * 16 + ((lane >> 3) & 1) * 8);
  b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
}

/// B fragments of output columns dt and dt + 1 (8 each) over keys 16 kk to 16 kk + 16 of the V
/// tile `vt`.
template <int Ld, class T>
__device__ __forceinline__ void value_fragments(unsigned (&b0)[2], unsigned (&b1)[2], const T* vt,
                                                int kk, int dt, int lane) {
  unsigned r[4];
  mma::ldmatrix_x4_trans(
      r, vt + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * Ld + dt * 8 + (lane >> 4) * 8);
  b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
}

/// The A fragment of 16 keys (key tiles 2 kk and 2 kk + 1 of the scores `s`) as T pairs.
template <class T, int NT>
__device__ __forceinline__ void probability_fragment(unsigned (&a)[4], const float (&s)[NT][4],
                                                     int kk) {
  a[0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
  a[1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
  a[2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  a[3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

/// S (16 rows x BN keys, this warp's) = Q K^T for the K tile `kt` in shared memory; Q from its
/// fragments in registers `qf`, or (QRegs false) from the Q tile at `qw`.
template <class T, int KS, int NT, int Ld, bool QRegs, int QF>
__device__ __forceinline__ void tile_scores(float (&s)[NT][4], const unsigned (&qf)[QF][4],
                                            const T* qw, const T* kt, int lane) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    unsigned a[4];
    if constexpr (QRegs) {
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = qf[ks][i];
    } else {
      mma::ldmatrix_x4(a, qw + ks * 16);
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      unsigned b0[2], b1[2];
      key_fragments<Ld>(b0, b1, kt, nt, ks, lane);
      mma::mma_16816<T>(s[nt], a, b0);
      mma::mma_16816<T>(s[nt + 1], a, b1);
    }
  }
}

/// Online softmax over one tile of scores (log2 units): each of the thread's two rows' max (a
/// quad of lanes holds a row), the running output and sum rescaled to it, the scores replaced by
/// their probabilities, by exp2_ftz (Ftz) or exp2f.
template <bool Ftz, int NT, int DT>
__device__ __forceinline__ void softmax_tile(float (&s)[NT][4], float (&o)[DT][4], float (&mx)[2],
                                             float (&l)[2]) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float m = mx[hr];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) m = fmaxf(m, fmaxf(s[nt][2 * hr], s[nt][2 * hr + 1]));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    const float alpha = exp2_from<Ftz>(mx[hr], m);
    mx[hr] = m;
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float pr = exp2_from<Ftz>(s[nt][2 * hr + e], m);
        s[nt][2 * hr + e] = pr;
        sum += pr;
      }
    l[hr] = l[hr] * alpha + sum;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      o[dt][2 * hr] *= alpha;
      o[dt][2 * hr + 1] *= alpha;
    }
  }
}

/// The tile's scores in log2 units; where the tile crosses the batch's last key, the causal
/// diagonal or a mask (`edge`), masked element by element, 8 keys at a time: a mask's loads are
/// not hoisted across them (above D 128 their registers would spill).
template <bool Causal, int Mask, class M, int NT>
__device__ __forceinline__ void scale_scores(float (&s)[NT][4], const Params& p, const Pair& r,
                                             bool edge, int row0, int c0) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float x = s[nt][e] * p.scale_log2;
      s[nt][e] =
          edge ? masked<Causal, Mask, M>(x, p, r, row0 + (e >> 1) * 8, c0 + nt * 8 + (e & 1)) : x;
    }
    if constexpr (Mask != kNoMask) asm volatile("" ::: "memory");
  }
}

/// O += P V for the V tile `vt`: the score accumulators of two key tiles of 8 are one A fragment
/// of 16 keys.
template <class T, int NT, int DT, int Ld>
__device__ __forceinline__ void accumulate_pv(float (&o)[DT][4], const float (&s)[NT][4],
                                              const T* vt, int lane) {
#pragma unroll
  for (int kk = 0; kk < NT / 2; ++kk) {
    unsigned a[4];
    probability_fragment<T>(a, s, kk);
#pragma unroll
    for (int dt = 0; dt < DT; dt += 2) {
      unsigned b0[2], b1[2];
      value_fragments<Ld>(b0, b1, vt, kk, dt, lane);
      mma::mma_16816<T>(o[dt], a, b0);
      mma::mma_16816<T>(o[dt + 1], a, b1);
    }
  }
}

/// The running state of MT tiles of 16 rows before any key: outputs 0, maxima -inf, sums 0.
template <int MT, int DT>
__device__ __forceinline__ void start_rows(float (&o)[MT][DT][4], float (&mx)[MT][2],
                                           float (&l)[MT][2]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0;
    mx[mt][0] = mx[mt][1] = minus_infinity();
    l[mt][0] = l[mt][1] = 0.0f;
  }
}

/// tile_scores for MT tiles of 16 query rows a warp (the Q tile's rows at `qw`, 16 apart), each
/// K fragment read from shared memory once for all of them: twice the products a byte read.
template <class T, int KS, int NT, int Ld, int MT>
__device__ __forceinline__ void tile_scores_rows(float (&s)[MT][NT][4], const T* qw, const T* kt,
                                                 int lane) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    unsigned a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) mma::ldmatrix_x4(a[mt], qw + mt * 16 * Ld + ks * 16);
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      unsigned b0[2], b1[2];
      key_fragments<Ld>(b0, b1, kt, nt, ks, lane);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma::mma_16816<T>(s[mt][nt], a[mt], b0);
        mma::mma_16816<T>(s[mt][nt + 1], a[mt], b1);
      }
    }
  }
}

/// accumulate_pv for MT tiles of 16 rows, each V fragment read once for all of them.
template <class T, int NT, int DT, int Ld, int MT>
__device__ __forceinline__ void accumulate_pv_rows(float (&o)[MT][DT][4],
                                                   const float (&s)[MT][NT][4], const T* vt,
                                                   int lane) {
#pragma unroll
  for (int kk = 0; kk < NT / 2; ++kk) {
    unsigned a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) probability_fragment<T>(a[mt], s[mt], kk);
#pragma unroll
    for (int dt = 0; dt < DT; dt += 2) {
      unsigned b0[2], b1[2];
      value_fragments<Ld>(b0, b1, vt, kk, dt, lane);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma::mma_16816<T>(o[mt][dt], a[mt], b0);
        mma::mma_16816<T>(o[mt][dt + 1], a[mt], b1);
      }
    }
  }
}

/// One key tile's scores for MT tiles of rows (one tile: Q from registers where `QRegs`).
template <class T, int KS, int NT, int Ld, bool QRegs, int QF, int MT>
__device__ __forceinline__ void scores_of(float (&s)[MT][NT][4], const unsigned (&qf)[QF][4],
                                          const T* qw, const T* kt, int lane) {
  if constexpr (MT == 1)
    tile_scores<T, KS, NT, Ld, QRegs>(s[0], qf, qw, kt, lane);
  else
    tile_scores_rows<T, KS, NT, Ld, MT>(s, qw, kt, lane);
}
/// The outputs of MT tiles of rows plus the tile's probabilities times V.
template <class T, int NT, int DT, int Ld, int MT>
__device__ __forceinline__ void add_pv(float (&o)[MT][DT][4], const float (&s)[MT][NT][4],
                                       const T* vt, int lane) {
  if constexpr (MT == 1)
    accumulate_pv<T, NT, DT, Ld>(o[0], s[0], vt, lane);
  else
    accumulate_pv_rows<T, NT, DT, Ld, MT>(o, s, vt, lane);
}

/// The thread's output rows (row0, row0 + 8), divided by their sums; a row that saw no key
/// gives zeros; columns from D on (D's padding) are not written.
template <class T, int D, int DT>
__device__ __forceinline__ void store_output(T* out, const config::Strides& so, int sq, int row0,
                                             const float (&o)[DT][4], const float (&l)[2], int t) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const float inv = inverse_row_sum(l[hr]);
    const int i = row0 + hr * 8;
    if (i >= sq) continue;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      const int c = dt * 8 + 2 * t;
      if (c >= D) continue;
      T* at = out + (long long)i * so.row + (long long)c * so.col;
      at[0] = from_float<T>(o[dt][2 * hr] * inv);
      at[so.col] = from_float<T>(o[dt][2 * hr + 1] * inv);
    }
  }
}

/// The block's output rows (those of MT tiles of 16 from row0, the pair's output at `out`), then
/// their lse where the call asks for it (the outputs' registers free by then).
template <class T, int D, class Epi, int MT, int DT>
__device__ __forceinline__ void finish_rows(const Params& p, long long out, int row0,
                                            const float (&o)[MT][DT][4], const float (&mx)[MT][2],
                                            const float (&l)[MT][2], int t) {
  if constexpr (HasEpilogue<Epi>::value) {
    int pair, m_block;
    block_work(p, int(blockIdx.x), pair, m_block);  // again: nothing held through the loop
    long long bi[config::kBatchDims];
    batch_index(p, pair / p.heads, bi);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      epilogue_rows<Epi, D, DT>(p, bi, pair % p.heads, row0 + 16 * mt, l[mt], t,
                                [&](int j, int e) { return o[mt][j][e]; });
  } else if (p.ptr[config::kOut] != 0) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      store_output<T, D, DT>(reinterpret_cast<T*>(p.ptr[config::kOut]) + out, p.s[config::kOut],
                             p.sq, row0 + 16 * mt, o[mt], l[mt], t);
  }
  if (p.ptr[config::kLsePointer] == 0) return;
  int pair, m_block;
  block_work(p, int(blockIdx.x), pair, m_block);  // again: nothing held through the loop
  const long long at = lse_offset(p, pair / p.heads, pair % p.heads);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) store_lse_rows(p, at, row0 + 16 * mt, mx[mt], l[mt], t);
}

template <class T, class M, class L, int D, int BM, int BN, int Stages, int WM, bool Causal,
          bool BottomRight, int Mask, bool Lens, class Epi = void, class Pro = void>
__global__ void __launch_bounds__(BM / WM * 32, 1) attention_mma(const Params p) {
  constexpr int kLd = config::row_elements(D), kThreads = BM / WM * 32, MT = WM / 16;
  constexpr int KS = config::padded_d(D) / 16, NT = BN / 8, DT = config::padded_d(D) / 8;
  // One tile of rows a warp keeps Q's fragments in registers where they fit; two read them
  // from the Q tile at each step, as every K fragment then serves both.
  constexpr bool kQRegs = MT == 1 && config::q_in_registers(D);
  static_assert(D % 8 == 0 && D <= 256, "D is a multiple of 8 up to 256");
  static_assert(BM % WM == 0 && WM % 16 == 0 && BN % 16 == 0 && Stages >= 2,
                "16-row tiles, two stages or more");
  extern __shared__ __align__(128) char smem_raw[];
  T* const qs = reinterpret_cast<T*>(smem_raw);
  T* const ring = qs + BM * kLd;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int pair, m_block;
  block_work(p, int(blockIdx.x), pair, m_block);
  const int m0 = m_block * BM;
  const Pair r = locate<Lens, L, BottomRight>(p, pair / p.heads, pair % p.heads);
  const T* const q = reinterpret_cast<const T*>(p.ptr[1]) + r.off[config::kQ];
  const T* const k = reinterpret_cast<const T*>(p.ptr[2]) + r.off[config::kK];
  const T* const v = reinterpret_cast<const T*>(p.ptr[3]) + r.off[config::kV];
  const int n_end = key_end<Causal>(r, m0, BM);
  const int tiles = (n_end + BN - 1) / BN;

  if constexpr (HasPrologue<Pro>::value) {
    long long bi[config::kBatchDims];
    batch_index(p, pair / p.heads, bi);
    prologue_tile<T, Pro, Epi, D, BM, kLd, kThreads>(qs, p, bi, pair % p.heads, m0, tid);
  } else {
    load_tile<T, D, BM, kLd, kThreads>(qs, q + (long long)m0 * p.s[config::kQ].row,
                                       p.s[config::kQ].row, 0, p.sq - m0, tid);
  }
  mma::cp_async_commit();
  const auto load_kv = [&](int kt) {
    load_kv_tile<T, D, BN, kLd, kThreads>(ring + kt % Stages * 2 * BN * kLd, k, p.s[config::kK].row,
                                          v, p.s[config::kV].row, kt * BN, n_end, tid);
  };
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < tiles) load_kv(s);
    mma::cp_async_commit();
  }

  const T* const qw = qs + (warp * WM + (lane & 15)) * kLd + (lane >> 4) * 8;
  unsigned qf[kQRegs ? KS : 1][4];
  if constexpr (kQRegs) {
    mma::cp_async_wait<Stages - 1>();  // the Q tile landed
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) mma::ldmatrix_x4(qf[ks], qw + ks * 16);
  }
  float o[MT][DT][4], mx[MT][2], l[MT][2];
  start_rows(o, mx, l);
  // Tile mt's rows row0 + 16 mt and row0 + 16 mt + 8.
  const int row0 = m0 + warp * WM + (lane >> 2), t = lane & 3;

#pragma unroll 1
  for (int kt = 0; kt < tiles; ++kt) {
    mma::cp_async_wait<Stages - 2>();
    __syncthreads();  // tile kt landed for every thread; the stage of tile kt - 1 is free
    if (kt + Stages - 1 < tiles) load_kv(kt + Stages - 1);
    mma::cp_async_commit();
    const T* const kt_tile = ring + kt % Stages * 2 * BN * kLd;
    const int n0 = kt * BN;
    float s[MT][NT][4];
    scores_of<T, KS, NT, kLd, kQRegs>(s, qf, qw, kt_tile, lane);
    const bool edge = n0 + BN > r.skv || Mask != kNoMask || (Causal && n0 + BN - 1 > m0 + r.diag);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      scale_scores<Causal, Mask, M>(s[mt], p, r, edge, row0 + 16 * mt, n0 + 2 * t);
      // Causal tiles keep exp2f: with exp2_ftz, ptxas spills the causal tiles of 64 keys and
      // 32 rows a warp at D 128 for sm_90a (the tuning space's compile test).
      softmax_tile<!Causal>(s[mt], o[mt], mx[mt], l[mt]);
    }
    add_pv<T, NT, DT, kLd>(o, s, kt_tile + BN * kLd, lane);
  }
  mma::cp_async_wait<0>();
  finish_rows<T, D, Epi>(p, r.off[config::kOut], row0, o, mx, l, t);
}

}  // namespace kiln::attention
