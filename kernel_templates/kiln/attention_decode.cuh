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
#include <kiln/cluster.cuh>

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

/// This warp's partial result into `part` (config::decode_part_floats): its rows' maxima, sums
/// and unnormalized outputs.
template <int DT, int Dp>
__device__ __forceinline__ void store_part(float* part, const float (&o)[DT][4],
                                           const float (&mx)[2], const float (&l)[2], int lane) {
  const int t = lane & 3;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int row = (lane >> 2) + 8 * hr;
    float sum = l[hr];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (t == 0) part[row] = mx[hr], part[config::kDecodeRows + row] = sum;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      float* at = part + 2 * config::kDecodeRows + row * Dp + dt * 8 + 2 * t;
      at[0] = o[dt][2 * hr];
      at[1] = o[dt][2 * hr + 1];
    }
  }
}

/// Where partial result `n` of `Parts` is: this block's shared memory (`Remote` false) or block
/// n of the cluster's.
template <bool Remote>
struct Parts {
  const float* local;
  int stride;
  __device__ __forceinline__ float at(int n, int i) const {
    if constexpr (Remote)
      return cluster_load(cluster_map(local + i, unsigned(n)));
    else
      return local[n * stride + i];
  }
};

/// Element `c` of packed row `row` merged over `n` partial results: the merged max and sum into
/// `m` and `sum`, the unnormalized output returned.
template <class P>
__device__ __forceinline__ float merge_parts(const P& parts, int n, int row, int c, int dp,
                                             float& m, float& sum) {
  m = minus_infinity();
  for (int k = 0; k < n; ++k) m = fmaxf(m, parts.at(k, row));
  float acc = 0.0f;
  sum = 0.0f;
  for (int k = 0; k < n; ++k) {
    const float mk = parts.at(k, row);
    const float w = mk == minus_infinity() ? 0.0f : exp2f(mk - m);
    sum += w * parts.at(k, config::kDecodeRows + row);
    acc += w * parts.at(k, 2 * config::kDecodeRows + row * dp + c);
  }
  return acc;
}

/// Where packed row `x` (query row x / group of the group's head x % group) starts in tensor
/// `t` of the pair `r`.
__device__ __forceinline__ long long packed_row(const Params& p, const Pair& r, int t, int x) {
  return r.off[t] + x % p.group * p.s[t].head + (long long)(x / p.group) * p.s[t].row;
}

/// Element `c` of packed row `x`'s output: `acc` divided by `sum` (0 for a row that saw no key).
template <class T, class Epi>
__device__ __forceinline__ void store_merged(const Params& p, const Pair& r, int x, int c,
                                             float acc, float sum) {
  if constexpr (HasEpilogue<Epi>::value) {
    long long bi[config::kBatchDims];
    batch_index(p, r.b, bi);
    epilogue_element<Epi>(p, bi, r.h + x % p.group, x / p.group, c,
                          sum > 0.0f ? acc / sum : 0.0f);
    return;
  }
  if (p.ptr[config::kOut] == 0) return;  // a call that asks for the lse alone
  T* out = reinterpret_cast<T*>(p.ptr[config::kOut]) + packed_row(p, r, config::kOut, x) +
           (long long)c * p.s[config::kOut].col;
  *out = from_float<T>(sum > 0.0f ? acc / sum : 0.0f);
}

/// Packed row `x`'s lse from its merged max `m` and sum, where the call asks for it.
__device__ __forceinline__ void store_packed_lse(const Params& p, const Pair& r, int x, float m,
                                                 float sum) {
  if (p.ptr[config::kLsePointer] == 0) return;
  reinterpret_cast<float*>(p.ptr[config::kLsePointer])[packed_row(p, r, config::kLse, x)] =
      row_lse(m, sum);
}

/// The warps' partial results (`parts`, one after another) merged into the block's (`block`);
/// with one block a cluster, straight into the output instead.
template <class T, int D, int Warps, bool Final, class Epi>
__device__ __forceinline__ void merge_warps(float* block, const float* parts, const Params& p,
                                            const Pair& r, int rho0, int tid) {
  constexpr int kDp = config::padded_d(D), kPart = config::decode_part_floats(D);
  const Parts<false> from{parts, kPart};
  const int rows = min(config::kDecodeRows, p.sq * p.group - rho0);
  for (int e = tid; e < rows * kDp; e += Warps * 32) {
    const int row = e / kDp, c = e % kDp;
    float m, sum;
    const float acc = merge_parts(from, Warps, row, c, kDp, m, sum);
    if constexpr (Final) {
      if (c == 0) store_packed_lse(p, r, rho0 + row, m, sum);
      if (c < D) store_merged<T, Epi>(p, r, rho0 + row, c, acc, sum);
    } else {
      if (c == 0) block[row] = m, block[config::kDecodeRows + row] = sum;
      block[2 * config::kDecodeRows + row * kDp + c] = acc;
    }
  }
}

/// The cluster's Split block results merged; this block writes every Split-th output element,
/// or (`chunk` not null) of the cluster's partial result there, as store_part lays one out.
/// Every block of the cluster calls it, once its result is in `block`.
template <class T, int D, int Warps, int Split, class Epi>
__device__ __forceinline__ void merge_blocks(const float* block, const Params& p, const Pair& r,
                                             int rho0, int rank, int tid, float* chunk) {
  constexpr int kDp = config::padded_d(D);
  cluster_arrive_release();  // the block's result, to the cluster
  cluster_wait();
  const Parts<true> from{block, 0};
  const int rows = min(config::kDecodeRows, p.sq * p.group - rho0);
  for (int e = rank * Warps * 32 + tid; e < rows * D; e += Split * Warps * 32) {
    const int row = e / D, c = e % D;
    float m, sum;
    const float acc = merge_parts(from, Split, row, c, kDp, m, sum);
    if (!chunk) {
      if (c == 0) store_packed_lse(p, r, rho0 + row, m, sum);
      store_merged<T, Epi>(p, r, rho0 + row, c, acc, sum);
      continue;
    }
    if (c == 0) chunk[row] = m, chunk[config::kDecodeRows + row] = sum;
    chunk[2 * config::kDecodeRows + row * kDp + c] = acc;
  }
  cluster_arrive();  // no block leaves while another still reads its shared memory
  cluster_wait();
}

/// After every block wrote its share of its chunk's partial result (`parts` holds the tile's
/// Chunks, `counter` counts the Chunks * Split blocks in, and only grows): the block that
/// arrives last merges them into the output.
template <class T, int D, int Warps, int Chunks, int Split, class Epi>
__device__ __forceinline__ void merge_chunks(const float* parts, unsigned long long* counter,
                                             const Params& p, const Pair& r, int rho0, int tid) {
  constexpr int kDp = config::padded_d(D), kPart = config::decode_part_floats(D);
  __shared__ bool last;
  __syncthreads();  // the block's share written
  if (tid == 0) {
    __threadfence();
    const unsigned long long ticket = atomicAdd(counter, 1ull);
    last = ticket % (Chunks * Split) == Chunks * Split - 1;
    if (last) __threadfence();  // the others' shares, seen after their counts
  }
  __syncthreads();
  if (!last) return;
  // Each chunk's weight per row (exp2 of its max less the rows' max) and the rows' sums first,
  // in shared memory; then every output element one coalesced load a chunk.
  __shared__ float weight[Chunks][config::kDecodeRows], total[config::kDecodeRows];
  const int rows = min(config::kDecodeRows, p.sq * p.group - rho0);
  if (tid < rows) {
    float m = minus_infinity(), sum = 0.0f;
    for (int k = 0; k < Chunks; ++k) m = fmaxf(m, __ldcg(parts + k * kPart + tid));
    for (int k = 0; k < Chunks; ++k) {
      const float mk = __ldcg(parts + k * kPart + tid);
      weight[k][tid] = mk == minus_infinity() ? 0.0f : exp2f(mk - m);
      sum += weight[k][tid] * __ldcg(parts + k * kPart + config::kDecodeRows + tid);
    }
    total[tid] = sum;
    store_packed_lse(p, r, rho0 + tid, m, sum);
  }
  __syncthreads();
  for (int e = tid; e < rows * D; e += Warps * 32) {
    const int row = e / D, c = e % D;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < Chunks; ++k)
      acc += weight[k][row] * __ldcg(parts + k * kPart + 2 * config::kDecodeRows + row * kDp + c);
    store_merged<T, Epi>(p, r, rho0 + row, c, acc, total[row]);
  }
}

/// The warps' results (`o`, `mx`, `l`) into the output: merged in the block's shared memory
/// (`smem`, the rings' space), then between the cluster's Split blocks, then (Chunks > 1)
/// through the workspace by the last of the tile's blocks to finish.
template <class T, int D, int Warps, int Split, int Chunks, class Epi, int DT>
__device__ __forceinline__ void merge_results(float* smem, const float (&o)[DT][4],
                                              const float (&mx)[2], const float (&l)[2],
                                              const Params& p, const Pair& r, int rho0, int rank,
                                              int chunk, int work, int tid) {
  constexpr int kDp = config::padded_d(D), kPart = config::decode_part_floats(D);
  float* const parts = smem;
  float* const block = parts + Warps * kPart;
  store_part<DT, kDp>(parts + (tid >> 5) * kPart, o, mx, l, tid & 31);
  __syncthreads();
  if constexpr (Chunks == 1) {
    merge_warps<T, D, Warps, Split == 1, Epi>(block, parts, p, r, rho0, tid);
    if constexpr (Split > 1)
      merge_blocks<T, D, Warps, Split, Epi>(block, p, r, rho0, rank, tid, nullptr);
  } else {
    // The workspace: a counter per tile of packed rows, then each tile's Chunks partials.
    auto* counters = reinterpret_cast<unsigned long long*>(p.ptr[config::kWorkspace]);
    const int works = int(gridDim.x) / (Split * Chunks);
    float* const tile_parts = reinterpret_cast<float*>(counters + works) +
                              (long long)work * Chunks * kPart;
    float* const mine = tile_parts + chunk * kPart;
    // Without a cluster the warps' merge is the chunk's partial: written there at once.
    merge_warps<T, D, Warps, false, Epi>(Split > 1 ? block : mine, parts, p, r, rho0, tid);
    if constexpr (Split > 1) merge_blocks<T, D, Warps, Split, Epi>(block, p, r, rho0, rank, tid, mine);
    merge_chunks<T, D, Warps, Chunks, Split, Epi>(tile_parts, counters + work, p, r, rho0, tid);
  }
}

template <class T, class M, class L, int D, int BN, int Stages, int Warps, int Split, int Chunks,
          bool Causal, bool BottomRight, int Mask, bool Lens, class Epi = void>
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

  load_packed_q<T, D, kLd, Warps * 32>(qs, p, r, rho0, tid);
  mma::cp_async_commit();
  auto load_kv = [&](int n) {
    T* st = ring + n % Stages * kStage;
    const int kt = u + n * U;
    load_tile<T, D, BN, kLd, 32>(st, k, p.s[config::kK].row, kt * BN, n_end, lane);
    load_tile<T, D, BN, kLd, 32>(st + BN * kLd, v, p.s[config::kV].row, kt * BN, n_end, lane);
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
    softmax_tile(s, o[0], mx[0], l[0]);
    accumulate_pv<T, NT, DT, kLd>(o[0], s, tile + BN * kLd, lane);
  }
  mma::cp_async_wait<0>();
  __syncthreads();  // every warp is done with its ring: it now holds the partial results
  merge_results<T, D, Warps, Split, Chunks, Epi>(reinterpret_cast<float*>(rings), o[0], mx[0], l[0], p,
                                            r, rho0, rank, chunk, work, tid);
}

}  // namespace kiln::attention
