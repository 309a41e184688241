#pragma once
// The decode kernel's merge of partial results (attention_decode.cuh): each warp's online-softmax
// state into the block's shared memory, the blocks of a cluster over distributed shared memory,
// and (Chunks > 1) the clusters of a tile of packed rows through the launch's workspace, the
// last block to arrive writing the output.

#include <kiln/attention.cuh>
#include <kiln/cluster.cuh>

namespace kiln::attention {

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
    epilogue_element<Epi>(p, bi, r.h + x % p.group, x / p.group, c, sum > 0.0f ? acc / sum : 0.0f);
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
    float* const tile_parts =
        reinterpret_cast<float*>(counters + works) + (long long)work * Chunks * kPart;
    float* const mine = tile_parts + chunk * kPart;
    // Without a cluster the warps' merge is the chunk's partial: written there at once.
    merge_warps<T, D, Warps, false, Epi>(Split > 1 ? block : mine, parts, p, r, rho0, tid);
    if constexpr (Split > 1)
      merge_blocks<T, D, Warps, Split, Epi>(block, p, r, rho0, rank, tid, mine);
    merge_chunks<T, D, Warps, Chunks, Split, Epi>(tile_parts, counters + work, p, r, rho0, tid);
  }
}

}  // namespace kiln::attention
