#pragma once
// Merging a row's statistic (row_stats.cuh) across the threads of a block, and across the
// blocks of a thread-block cluster (sm_90 and later) that split one row between them: each
// block's statistic is read by every block of the cluster from its shared memory (distributed
// shared memory) and merged in rank order, so that every block holds the same bits.

namespace kiln {
namespace row {

/// The statistic of the whole block, in every thread.
template <class Row, int Block>
__device__ __forceinline__ typename Row::Stat block_reduce(typename Row::Stat v) {
  using Stat = typename Row::Stat;
  static_assert(sizeof(Stat) % 4 == 0, "a statistic is made of floats");
  constexpr int kFloats = sizeof(Stat) / 4;
  auto warp_reduce = [](Stat x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      Stat other;
#pragma unroll
      for (int i = 0; i < kFloats; ++i)
        reinterpret_cast<float*>(&other)[i] = __shfl_xor_sync(0xffffffffu, reinterpret_cast<const float*>(&x)[i], o);
      x = Row::merge(x, other);
    }
    return x;
  };
  __shared__ Stat partial[Block / 32];
  __shared__ Stat total;
  v = warp_reduce(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    Stat w = lane < Block / 32 ? partial[lane] : Row::init();
    w = warp_reduce(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
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

/// The statistic of the whole cluster (`v`: this block's, the same in every thread).
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
  __syncthreads();
  cluster_arrive();
  Stat total = parts[0];
#pragma unroll
  for (int r = 1; r < Split; ++r) total = Row::merge(total, parts[r]);
  return total;
}

}  // namespace row
}  // namespace kiln
