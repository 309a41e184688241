#pragma once
// Merging a row's statistic (row_stats.cuh) across the threads of a block, and across the
// blocks of a thread-block cluster (sm_90 and later) that split one row between them: every
// warp's statistic is pushed into every block's shared memory (distributed shared memory) and
// merged there in one fixed order, so that every block holds the same bits.

#include <kiln/cluster.cuh>
#include <kiln/row_config.cuh>

namespace kiln {
namespace row {

/// Lane 0's merge of the statistics of lanes 0 .. Width-1 (a butterfly of log2(Width) levels),
/// in every lane of the warp. Every warp that holds the same values gets the same bits. With
/// `live` (a power of two, the same in every lane) only lanes 0 .. live-1 are merged: the
/// levels above are skipped.
template <class Row, int Width>
__device__ __forceinline__ typename Row::Stat warp_reduce(typename Row::Stat x,
                                                          unsigned live = Width) {
  using Stat = typename Row::Stat;
  static_assert(sizeof(Stat) % 4 == 0, "a statistic is made of floats");
  static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0, "a power of two lanes");
  constexpr int kFloats = sizeof(Stat) / 4;
  Stat other;
  float* const of = reinterpret_cast<float*>(&other);
  const float* const xf = reinterpret_cast<const float*>(&x);
#pragma unroll
  for (int o = Width / 2; o > 0; o >>= 1) {
    if (unsigned(o) >= live) continue;
#pragma unroll
    for (int i = 0; i < kFloats; ++i) of[i] = __shfl_xor_sync(0xffffffffu, xf[i], o);
    x = Row::merge(x, other);
  }
#pragma unroll
  for (int i = 0; i < kFloats; ++i) of[i] = __shfl_sync(0xffffffffu, xf[i], 0);
  return other;
}

/// The smallest power of two >= n.
__host__ __device__ constexpr int pow2_at_least(int n) {
  return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2);
}

/// The statistic of the whole block of `warps` warps (at most Block / 32), in every thread.
/// Each warp merges its lanes, then every warp merges the warps' statistics itself (the same
/// bits in each; over as many levels as `warps` needs, which a bucket's kernel knows only at
/// run time): one __syncthreads, and no warp waits for another to merge. Once per kernel
/// (`partial` is not reused).
template <class Row, int Block>
__device__ __forceinline__ typename Row::Stat block_reduce(typename Row::Stat v, unsigned warps) {
  using Stat = typename Row::Stat;
  constexpr int kWarps = Block / 32;
  v = warp_reduce<Row, 32>(v);
  if constexpr (kWarps == 1) return v;  // one warp (a packed row's too): merged already
  __shared__ Stat partial[kWarps];
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  const unsigned live = warps <= 1 ? 1u : 1u << (32 - __clz(int(warps - 1)));
  return warp_reduce<Row, pow2_at_least(kWarps)>(lane < int(warps) ? partial[lane] : Row::init(),
                                                 live);
}

// Clusters (sm_90 and later): used only by kernels compiled for those (rows_split in rows.cuh).

/// What the blocks of a cluster push to each other: every warp's statistic, at [rank][warp] in
/// every block, and the mbarrier that counts their bytes in.
template <class Row, int Block, int Split>
struct ClusterParts {
  static_assert(sizeof(typename Row::Stat) <= config::kStatBytes,
                "a statistic of at most row_config.cuh's kStatBytes, as a bucket's stash leaves");
  unsigned long long bar;
  typename Row::Stat part[Split * (Block / 32)];
};
template <class Row, int Block, int Split>
__device__ __forceinline__ ClusterParts<Row, Block, Split>& cluster_parts() {
  __shared__ ClusterParts<Row, Block, Split> parts;
  return parts;
}
/// The shared-memory address of this block's mbarrier in ClusterParts.
template <class Row, int Block, int Split>
__device__ __forceinline__ unsigned cluster_bar() {
  return unsigned(__cvta_generic_to_shared(&cluster_parts<Row, Block, Split>().bar));
}

/// At the kernel's start: the mbarrier set to expect every warp's statistic (`warps` a block)
/// from every block of the cluster (`split` blocks, at most Split) (and `staged_bytes` more, that
/// the caller then copies in with stage_copy()), and made visible to them (they push only after the
/// cluster_wait() in cluster_reduce, which pairs with this arrive). The __syncthreads between the
/// init and the first arrive: without it, compute-sanitizer racecheck reports the two as a hazard
/// (8 per block, the mbarrier's bytes; ptxas issues the init on the warp-uniform datapath).
template <class Row, int Block, int Split>
__device__ __forceinline__ void cluster_start(unsigned staged_bytes, unsigned warps,
                                              unsigned split) {
  const unsigned bar = cluster_bar<Row, Block, Split>();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned bytes = split * warps * unsigned(sizeof(typename Row::Stat)) + staged_bytes;
    unsigned long long state;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
                 : "=l"(state)
                 : "r"(bar), "r"(bytes)
                 : "memory");
  }
  cluster_arrive();
}

/// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory into this
/// block's shared memory with the Tensor Memory Accelerator, counted on the mbarrier `bar`
/// (cluster_bar(), set by cluster_start()): they have landed once cluster_reduce() returns.
__device__ __forceinline__ void stage_copy(void* dst, const void* src, unsigned bytes,
                                           unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(unsigned(__cvta_generic_to_shared(dst))),
      "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar)
      : "memory");
}

/// The statistic of the whole cluster of `split` blocks (at most Split) of `warps` warps (at
/// most Block / 32; a warp's part at [rank][warp] of Block / 32), in every thread of every block
/// with the same bits. Each warp merges its lanes and pushes the result into every block's
/// ClusterParts (st.async, which counts its bytes on that block's mbarrier); a block waits on its
/// own mbarrier alone, then every warp merges the Split x warps statistics in one fixed order. No
/// __syncthreads and no cluster barrier on the way, and none at the end: a block leaves only after
/// every push to it has landed, and pushes nothing after that.
template <class Row, int Block, int Split>
__device__ __forceinline__ typename Row::Stat cluster_reduce(typename Row::Stat v, unsigned warps,
                                                             unsigned split) {
  using Stat = typename Row::Stat;
  constexpr int kWarps = Block / 32, kParts = Split * kWarps, kFloats = sizeof(Stat) / 4;
  auto& parts = cluster_parts<Row, Block, Split>();
  v = warp_reduce<Row, 32>(v);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned bar = cluster_bar<Row, Block, Split>();
  cluster_wait();  // every block's mbarrier is initialized
  if (lane < split) {
    const unsigned slot =
        unsigned(__cvta_generic_to_shared(&parts.part[cluster_rank() * kWarps + warp]));
    unsigned rslot, rbar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rslot) : "r"(slot), "r"(lane));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(bar), "r"(lane));
    const float* const f = reinterpret_cast<const float*>(&v);
#pragma unroll
    for (int i = 0; i < kFloats; ++i)
      asm volatile(
          "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(rslot +
                                                                                            4u * i),
          "r"(__float_as_uint(f[i])), "r"(rbar)
          : "memory");
  }
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar)
        : "memory");
  const unsigned present = unsigned(kWarps) * split;  // parts [0, present): ranks < split
  Stat acc = lane < present && lane % kWarps < warps ? parts.part[lane] : Row::init();
#pragma unroll
  for (int k = 32; k < kParts; k += 32)
    if (k + lane < present && (k + lane) % kWarps < warps)
      acc = Row::merge(acc, parts.part[k + lane]);
  return warp_reduce<Row, pow2_at_least(kParts < 32 ? kParts : 32)>(acc);
}

}  // namespace row
}  // namespace kiln
