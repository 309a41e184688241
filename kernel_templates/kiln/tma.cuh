#pragma once
// TMA and mbarrier for templates on sm_90 and later: the kernel parameter type of a tensor map
// (a template's tensor_map parameter, passed as `const __grid_constant__ kiln::TensorMap`), a
// shared-memory barrier that counts the bytes asynchronous copies land, tiled TMA loads, and
// tiled TMA stores. Each load moves the map's whole box; parts outside the tensor arrive as
// zeros and still count.

namespace kiln {

/// The bytes of a CUtensorMap, as the kernel receives them.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace tma {

__device__ inline unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Orders this thread's shared-memory writes before the async proxy's reads of them: a TMA store's
/// or the tensor cores' (wgmma operands), issued after a barrier; a barrier's initialization.
__device__ inline void fence_shared_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/// Makes `bar` (in shared memory) a barrier of `arrivals` arrivals, visible to the copy engine.
/// One thread calls it, then the block synchronizes.
__device__ inline void barrier_init(unsigned long long* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals));
  fence_shared_async();
}

/// Arrives on `bar` and tells it `bytes` more are on their way (the copies issued next).
__device__ inline void arrive_expect_bytes(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
}

/// Arrives on `bar` (one of its arrivals).
__device__ inline void arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}

/// Waits until the barrier's phase `parity` (0 for its first use, then 1, 0, ...) completes.
__device__ inline void barrier_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(shared_address(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

/// Copies the box of `map` at element coordinates (c0 innermost, c1) into `dst` (shared memory,
/// 128-byte aligned), completing its bytes on `bar`.
__device__ inline void load_2d(void* dst, const TensorMap* map, int c0, int c1,
                               unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(shared_address(bar))
      : "memory");
}

/// The same for a map of three dims.
__device__ inline void load_3d(void* dst, const TensorMap* map, int c0, int c1, int c2,
                               unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2),
      "r"(shared_address(bar))
      : "memory");
}

/// The same for a map of five dims.
__device__ inline void load_5d(void* dst, const TensorMap* map, int c0, int c1, int c2, int c3,
                               int c4, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
      "r"(shared_address(bar))
      : "memory");
}

/// Copies one column of an im2col map (an [N, H, W, C] tensor): its pixels from the one at
/// (w, h, n), walking the map's window, each read at (+ dw, + dh), channels from c; zeros
/// outside the tensor.
__device__ inline void load_im2col_4d(void* dst, const TensorMap* map, int c, int w, int h, int n,
                                      unsigned short dw, unsigned short dh,
                                      unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c), "r"(w), "r"(h), "r"(n),
      "r"(shared_address(bar)), "h"(dw), "h"(dh)
      : "memory");
}

/// The same for a map of one dim.
__device__ inline void load_1d(void* dst, const TensorMap* map, int c0, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2}], [%3];" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(shared_address(bar))
      : "memory");
}

/// Copies `src` (shared memory, 128-byte aligned, the box's layout) into the box of `map` at
/// element coordinates (c0 innermost, c1); parts outside the tensor are not written. The copy
/// joins this thread's open bulk group (store_commit).
__device__ inline void store_2d(const TensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(shared_address(src)), "r"(c0), "r"(c1)
               : "memory");
}

/// Closes this thread's open bulk group of stores.
__device__ inline void store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

/// Waits until at most `Pending` of this thread's bulk groups still read their shared memory
/// (the sources of the others may be written again).
template <int Pending>
__device__ inline void store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(Pending) : "memory");
}

/// Waits until every bulk group of this thread has completed (its writes done).
__device__ inline void store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

}  // namespace tma
#endif

}  // namespace kiln
