#pragma once
// Thread-block clusters (sm_90 and later): a block's rank, the cluster barrier, and loads from
// another block's shared memory (distributed shared memory). Only kernels compiled for those
// archs call them.

namespace kiln {

/// This block's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
/// The blocks of this block's cluster.
__device__ __forceinline__ unsigned cluster_blocks() {
  unsigned n;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
/// This thread arrives at the cluster barrier, releasing nothing (pair with cluster_wait()).
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
/// This thread arrives at the cluster barrier, releasing its writes to shared memory.
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
/// Waits until every thread of the cluster has arrived, acquiring what they released.
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}
/// The address in block `rank`'s shared memory of what `p` is in this block's.
__device__ __forceinline__ unsigned cluster_map(const void* p, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(r)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(rank));
  return r;
}
/// The float at `address` (from cluster_map).
__device__ __forceinline__ float cluster_load(unsigned address) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(address) : "memory");
  return v;
}
/// The four floats at `address` (from cluster_map; 16-byte aligned).
__device__ __forceinline__ float4 cluster_load4(unsigned address) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

}  // namespace kiln
