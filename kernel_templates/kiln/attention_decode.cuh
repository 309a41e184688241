#pragma once
// Attention for few query rows over many keys (decode): the mma.sync pieces of attention.cuh
// arranged so that a batch of one still fills the GPU.
// - The query heads that share a key/value head are packed into one tile of 16 rows (row
//   rho = query row i * group + head g of the group), so K and V are read once for all of them.
// - The keys are split: each of the Split blocks of a cluster (sm_90 and later) and each warp of
//   a block takes every (Split * Warps)-th tile of BN keys, through its own ring of Stages
//   shared-memory stages that cp.async fills ahead, with no block-wide barrier in the loop.
// - Each warp keeps an online softmax (f32 statistics in log2 units) and an unnormalized
//   output. At the end the warps' partial results merge in the block's shared memory, and the
//   blocks' merge over distributed shared memory, each block writing a share of the output.
// - With Chunks > 1 the keys are split further, between Chunks clusters (or blocks): each writes
//   its merged partial result to the launch's workspace and counts itself in at its tile's
//   counter there; the block that arrives last merges the Chunks partials into the output. A
//   batch of one then fills more multiprocessors than one cluster of 8 a key/value head can.
// A row whose every key is masked gives zeros, as on the other paths.

#include <kiln/attention.cuh>
#include <kiln/attention_decode_merge.cuh>

namespace kiln::attention {

/// The two packed rows a thread holds (rho and rho + 8 of the tile): whether each is a row of
/// the call, its query row, and where its mask row starts.
struct DecodeRows {
  bool ok[2];
  int i[2];
  long long mask[2];
};

__device__ __forceinline__ DecodeRows decode_rows(const Params& p, const Pair& r, int rho) {
  DecodeRows d;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int x = rho + 8 * hr, g = x % p.group;
    d.ok[hr] = x < p.sq * p.group;
    d.i[hr] = x / p.group;
    d.mask[hr] =
        r.off[config::kMask] + g * p.s[config::kMask].head + d.i[hr] * p.s[config::kMask].row;
  }
  return d;
}

/// The tile's 16 packed rows of q into shared memory (rows past the call and D's padding zero).
template <class T, int D, int Ld, int Threads>
__device__ __forceinline__ void load_packed_q(T* qs, const Params& p, const Pair& r, int rho0,
                                              int tid) {
  constexpr int kChunks = config::padded_d(D) / 8;
  const T* const q = reinterpret_cast<const T*>(p.ptr[1]);
  for (int c = tid; c < config::kDecodeRows * kChunks; c += Threads) {
    const int row = c / kChunks, ch = c % kChunks, x = rho0 + row, g = x % p.group;
    const bool ok = x < p.sq * p.group && ch * 8 < D;
    const T* from = ok ? q + r.off[config::kQ] + g * p.s[config::kQ].head +
                             (long long)(x / p.group) * p.s[config::kQ].row + ch * 8
                       : q;
    mma::cp_async16(qs + row * Ld + ch * 8, from, ok ? 16 : 0);
  }
}

/// The tile's scores in log2 units, masked element by element where the tile is an edge.
template <bool Causal, int Mask, class M, int NT>
__device__ __forceinline__ void decode_scores(float (&s)[NT][4], const Params& p, const Pair& r,
                                              const DecodeRows& d, bool edge, int c0) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int hr = e >> 1;
      const float x = s[nt][e] * p.scale_log2;
      s[nt][e] = edge ? masked_at<Causal, Mask, M>(x, p, r, d.ok[hr], d.i[hr], d.mask[hr],
                                                   c0 + nt * 8 + (e & 1))
                      : x;
    }
    if constexpr (Mask != kNoMask) asm volatile("" ::: "memory");
  }
}

template <class T, class M, class L, int D, int BN, int Stages, int Warps, int Split, int Chunks,
          bool Causal, bool BottomRight, int Mask, bool Lens, class Epi = void, class Pro = void>
__global__ void __launch_bounds__(Warps * 32, 1) attention_decode(const Params p) {
  constexpr int kLd = config::row_elements(D), kDp = config::padded_d(D);
  constexpr int KS = kDp / 16, NT = BN / 8, DT = kDp / 8, kStage = 2 * BN * kLd;
  constexpr bool kQRegs = config::q_in_registers(D);
  static_assert(D % 8 == 0 && D <= 256, "D is a multiple of 8 up to 256");
  static_assert(BN % 16 == 0 && Stages >= 2 && Split >= 1, "16-key tiles, two stages or more");
  extern __shared__ __align__(128) char smem_raw[];
  T* const qs = reinterpret_cast<T*>(smem_raw);
  T* const rings = qs + config::kDecodeRows * kLd;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int rank = int(blockIdx.x) % Split, chunk = int(blockIdx.x) / Split % Chunks;
  const int work = int(blockIdx.x) / Split / Chunks;
  const int kv_heads = p.heads / p.group, kv_pairs = p.batches * kv_heads;
  const int pair = work % kv_pairs, rho0 = work / kv_pairs * config::kDecodeRows;
  const Pair r = locate<Lens, L, BottomRight>(p, pair / kv_heads, pair % kv_heads * p.group);
  const T* const k = reinterpret_cast<const T*>(p.ptr[2]) + r.off[config::kK];
  const T* const v = reinterpret_cast<const T*>(p.ptr[3]) + r.off[config::kV];
  const int rows = p.sq * p.group;
  const int i_first = rho0 / p.group;
  const int i_last = (min(rho0 + config::kDecodeRows, rows) - 1) / p.group;
  const int n_end = key_end<Causal>(r, i_last, 1);
  const int tiles = (n_end + BN - 1) / BN;
  // Worker u of U takes tiles u, u + U, ...
  const int u = (chunk * Split + rank) * Warps + warp, U = Chunks * Split * Warps;
  const int mine = tiles > u ? (tiles - u + U - 1) / U : 0;
  T* const ring = rings + warp * Stages * kStage;

  if constexpr (HasPrologue<Pro>::value) {
    long long bi[config::kBatchDims];
    batch_index(p, pair / kv_heads, bi);
    prologue_packed<T, Pro, Epi, D, config::kDecodeRows, kLd, Warps * 32>(
        qs, p, bi, pair % kv_heads * p.group, rho0, tid);
  } else {
    load_packed_q<T, D, kLd, Warps * 32>(qs, p, r, rho0, tid);
  }
  mma::cp_async_commit();
  const auto load_kv = [&](int n) {
    load_kv_tile<T, D, BN, kLd, 32>(ring + n % Stages * kStage, k, p.s[config::kK].row, v,
                                    p.s[config::kV].row, (u + n * U) * BN, n_end, lane);
  };
#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < mine) load_kv(s);
    mma::cp_async_commit();
  }
  mma::cp_async_wait<Stages - 1>();  // the Q tile landed
  __syncthreads();
  const T* const qw = qs + (lane & 15) * kLd + (lane >> 4) * 8;
  unsigned qf[kQRegs ? KS : 1][4];
  if constexpr (kQRegs) {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) mma::ldmatrix_x4(qf[ks], qw + ks * 16);
  }
  const DecodeRows d = decode_rows(p, r, rho0 + (lane >> 2));
  float o[1][DT][4], mx[1][2], l[1][2];
  start_rows(o, mx, l);

#pragma unroll 1
  for (int n = 0; n < mine; ++n) {
    mma::cp_async_wait<Stages - 2>();
    __syncwarp();  // tile n landed for every lane; the stage of tile n - 1 is free
    if (n + Stages - 1 < mine) load_kv(n + Stages - 1);
    mma::cp_async_commit();
    const T* const tile = ring + n % Stages * kStage;
    const int n0 = (u + n * U) * BN;
    float s[NT][4];
    tile_scores<T, KS, NT, kLd, kQRegs>(s, qf, qw, tile, lane);
    const bool edge =
        n0 + BN > r.skv || Mask != kNoMask || (Causal && n0 + BN - 1 > i_first + r.diag);
    decode_scores<Causal, Mask, M>(s, p, r, d, edge, n0 + 2 * (lane & 3));
    softmax_tile<true>(s, o[0], mx[0], l[0]);
    accumulate_pv<T, NT, DT, kLd>(o[0], s, tile + BN * kLd, lane);
  }
  mma::cp_async_wait<0>();
  __syncthreads();  // every warp is done with its ring: it now holds the partial results
  merge_results<T, D, Warps, Split, Chunks, Epi>(reinterpret_cast<float*>(rings), o[0], mx[0], l[0],
                                                 p, r, rho0, rank, chunk, work, tid);
}

}  // namespace kiln::attention
