#pragma once
// Merging a row's statistic (row_stats.cuh) across the threads of a block, and across the
// blocks of a thread-block cluster (sm_90 and later) that split one row between them: each
// block's statistic is read by every block of the cluster from its shared memory (distributed
// shared memory) and merged in one fixed order, so that every block holds the same bits.

namespace kiln {
namespace row {

/// Lane 0's merge of the statistics of lanes 0 .. Width-1 (a butterfly of log2(Width) levels),
/// in every lane of the warp. Every warp that holds the same values gets the same bits.
template <class Row, int Width>
__device__ __forceinline__ typename Row::Stat warp_reduce(typename Row::Stat x) {
  using Stat = typename Row::Stat;
  static_assert(sizeof(Stat) % 4 == 0, "a statistic is made of floats");
  static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0, "a power of two lanes");
  constexpr int kFloats = sizeof(Stat) / 4;
  Stat other;
  float* const of = reinterpret_cast<float*>(&other);
  const float* const xf = reinterpret_cast<const float*>(&x);
#pragma unroll
  for (int o = Width / 2; o > 0; o >>= 1) {
#pragma unroll
    for (int i = 0; i < kFloats; ++i) of[i] = __shfl_xor_sync(0xffffffffu, xf[i], o);
    x = Row::merge(x, other);
  }
#pragma unroll
  for (int i = 0; i < kFloats; ++i) of[i] = __shfl_sync(0xffffffffu, xf[i], 0);
  return other;
}

/// The smallest power of two >= n.
__host__ __device__ constexpr int pow2_at_least(int n) { return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2); }

/// The statistic of the whole block, in every thread. Each warp merges its lanes, then every
/// warp merges the warps' statistics itself (the same bits in each): one __syncthreads, and no
/// warp waits for another to merge. Once per kernel (`partial` is not reused).
template <class Row, int Block>
__device__ __forceinline__ typename Row::Stat block_reduce(typename Row::Stat v) {
  using Stat = typename Row::Stat;
  constexpr int kWarps = Block / 32;
  __shared__ Stat partial[kWarps];
  v = warp_reduce<Row, 32>(v);
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  return warp_reduce<Row, pow2_at_least(kWarps)>(lane < kWarps ? partial[lane] : Row::init());
}

// Clusters (sm_90 and later): used only by kernels compiled for those (rows_split in rows.cuh).

/// This block's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
/// This thread arrives at the cluster barrier, releasing nothing (pair with cluster_wait()).
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
/// Waits until every thread of the cluster has arrived, acquiring what they released. Also: a
/// block must not exit while another may still read its shared memory.
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

/// The statistic of the whole cluster (`v`: this block's, the same in every thread). The Split
/// blocks' statistics are read into shared memory, then every warp merges them (warp_reduce),
/// so every thread of every block holds the same bits.
template <class Row, int Split>
__device__ __forceinline__ typename Row::Stat cluster_reduce(typename Row::Stat v) {
  using Stat = typename Row::Stat;
  constexpr int kFloats = sizeof(Stat) / 4;
  __shared__ Stat mine;
  __shared__ Stat parts[Split];
  // Only the writer of `mine` releases it (a fence, then the relaxed arrive): a release arrive
  // by every thread cost each warp a GPU-scope MEMBAR (~10% of the stalls of softmax over bf16
  // rows of 65536 split 8 ways, ncu on an H100).
  if (threadIdx.x == 0) {
    mine = v;
    asm volatile("fence.acq_rel.cluster;" ::: "memory");
  }
  cluster_arrive();
  cluster_wait();  // acquires what the other blocks released
  if (threadIdx.x < Split) {
    const unsigned local = unsigned(__cvta_generic_to_shared(&mine));
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(unsigned(threadIdx.x)));
#pragma unroll
    for (int f = 0; f < kFloats; ++f)
      asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(reinterpret_cast<float*>(&parts[threadIdx.x])[f]) : "r"(remote + 4u * f));
  }
  // The remote reads have landed (their values are stored here) before this block arrives. A
  // relaxed arrive orders nothing: merged straight from the loaded registers, ptxas put the
  // arrive right after the load (SASS), a peer could exit under the read in flight, and
  // rms_norm over bf16 rows of 65536 failed at launch (CUDA_ERROR_LAUNCH_FAILED).
  __syncthreads();
  cluster_arrive();  // pairs with the cluster_wait() before the block exits
  const unsigned lane = threadIdx.x % 32;
  return warp_reduce<Row, Split>(lane < Split ? parts[lane] : Row::init());
}

}  // namespace row
}  // namespace kiln
