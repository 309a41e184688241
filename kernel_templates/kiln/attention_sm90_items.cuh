#pragma once
// The shared memory of attention_sm90.cuh's blocks, and their items: an item is 128 query rows
// of one (batch, head) pair, numbered in block_work's order (the longest causal items first). A
// block's producer thread draws its items and hands each to the consumer groups in shared
// memory, beside the item's Q tile (the slot is written before Q's barrier is arrived on, and
// read after it is waited for).
// - Static (full attention, whose items are all alike): blockIdx.x, + gridDim.x, ...
// - Dynamic (causal, whose items differ in length): blockIdx.x, then the next item nobody has
//   drawn, from a counter in the launch's workspace; a block that drew short items draws more,
//   so persistent blocks stay balanced in the longest-first order. The last block to finish
//   sets the counters back to zero, as the next launch expects them.

#include <kiln/attention_common.cuh>

namespace kiln::attention {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace sm90 {

/// The block's shared memory (attention_config.cuh's layout).
template <int D, int BN, int Stages>
struct Block {
  static constexpr int kDp = config::wgmma_d(D), kAtoms = kDp / 64;
  static constexpr int kRows = config::kWgmmaRows;
  static constexpr int kQ = config::wgmma_tile_bytes(kRows, D);
  static constexpr int kKv = config::wgmma_tile_bytes(BN, D);
  /// Q tiles: a block's item n takes tile n % kQTiles.
  static constexpr int kQTiles = config::wgmma_q_tiles(D, BN, Stages);
  static constexpr int kBars = 2 * kQTiles;  // the ring's barriers after Q's
  unsigned char* q0;  // tile b at q0 + b * kQ
  unsigned char* k;   // stage s at k + s * kKv, V's after all of K's
  unsigned char* v;
  unsigned long long* bars;  // Q landed, Q free: kQTiles each; K landed, K free, V landed, V
                             // free: Stages each; then the item of each Q tile (items.cuh),
                             // then each consumer group's copy of it

  __device__ __forceinline__ unsigned char* q(int b) const { return q0 + b * kQ; }
  __device__ __forceinline__ unsigned long long* q_full(int b) const { return bars + b; }
  __device__ __forceinline__ unsigned long long* q_free(int b) const {
    return bars + kQTiles + b;
  }
  __device__ __forceinline__ unsigned long long* k_full(int s) const { return bars + kBars + s; }
  __device__ __forceinline__ unsigned long long* k_free(int s) const {
    return bars + kBars + Stages + s;
  }
  __device__ __forceinline__ unsigned long long* v_full(int s) const {
    return bars + kBars + 2 * Stages + s;
  }
  __device__ __forceinline__ unsigned long long* v_free(int s) const {
    return bars + kBars + 3 * Stages + s;
  }
  __device__ __forceinline__ volatile int* item(int b) const {
    return reinterpret_cast<volatile int*>(bars + kBars + 4 * Stages) + b;
  }
  __device__ __forceinline__ volatile int* copy(int c, int b) const {
    return item(kQTiles + c * kQTiles + b);
  }
};

/// An item: its first query row, its head, the maps' coordinates of its batch dims, and the
/// tiles of keys it reads.
struct Work {
  int m0, h, b1, b2, tiles;
  int skv, diag;  ///< the pair's keys and causal diagonal (Pair's)
  long long out;  ///< the output's offset of the pair
};

/// Item `item` of the launch (block_work's order): its pair, rows, the maps' coordinates, and
/// the tiles of keys its rows see.
template <int BN, bool Lens, class L, bool BottomRight, bool Causal>
__device__ __forceinline__ Work work_of(const Params& p, int item) {
  int pair, m_block;
  block_work(p, item, pair, m_block);
  const int b = pair / p.heads;
  Work w;
  w.h = pair % p.heads;
  w.m0 = m_block * config::kWgmmaRows;
  w.b2 = int(b % p.batch[2]);
  w.b1 = int(b / p.batch[2] % p.batch[1]);
  const Pair r = locate<Lens, L, BottomRight>(p, b, w.h);
  w.skv = r.skv, w.diag = r.diag, w.out = r.off[config::kOut];
  w.tiles = (key_end<Causal>(r, w.m0, config::kWgmmaRows) + BN - 1) / BN;
  return w;
}

/// Where the producer draws a block's items from (the file's comment). `items` past the last
/// is the end: the producer hands it on, so the consumers stop too.
template <bool Dynamic>
struct Items {
  /// Dynamic: the launch's workspace, [0] items drawn past the first gridDim.x, [1] blocks done.
  unsigned* counter;
  int items;

  __device__ __forceinline__ int first() const { return int(blockIdx.x); }
  __device__ __forceinline__ int after(int item) const {
    if constexpr (Dynamic)
      return int(gridDim.x) + int(atomicAdd(counter, 1u));
    else
      return item + int(gridDim.x);
  }
  /// The producer, after its last draw: the last block of the launch to get here (every draw
  /// of the others ordered before its acquire) resets the counters.
  __device__ __forceinline__ void finish() const {
    if constexpr (Dynamic) {
      unsigned done;
      asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;"
                   : "=r"(done)
                   : "l"(counter + 1)
                   : "memory");
      if (done == gridDim.x - 1) {
        atomicExch(counter, 0u);
        atomicExch(counter + 1, 0u);
      }
    }
  }
};

}  // namespace sm90
#endif

}  // namespace kiln::attention
