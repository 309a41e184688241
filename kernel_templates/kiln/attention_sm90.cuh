#pragma once
// Attention on sm_90a in the manner of FlashAttention-3: a block takes 128 query rows of one
// (batch, head); one thread of a producer warpgroup loads its Q (into the other of two Q tiles
// where they fit, so that a block's next item's Q lands under this one's tiles) and tiles of BN
// keys and values through a ring of Stages stages with TMA (each tensor a 5-d map [D, rows, heads,
// two batch dims], so strided views are read in place; D padded to 64 columns and rows past the
// tensor arrive as zeros); two consumer warpgroups take 64 rows each: S = Q K^T by wgmma from
// shared memory, the online softmax on S's accumulators in registers (f32, log2 units; the scale
// must be above 0), then O += P V by wgmma with P straight from those registers (the register-A
// form: a score accumulator's fragment is the A fragment of a 16-bit product). The two groups take
// turns at the tensor cores: one issues its tile's Q K^T and the previous tile's P V, then runs its
// softmax while the other's products run (ping-pong, ordered by named barriers). The K and V stages
// are released as soon as both groups' products that read them are done (full and empty mbarriers
// per stage, K and V apart so that Q K^T starts before V lands). Persistent blocks take several
// items (a pair's 128-row block) each, as attention_sm90_items.cuh draws them, the next item's
// loads running under this one's last products and store. Causal items stop at the last tile their
// rows see, the longest first; only tiles that cross the diagonal or the batch's last key are
// masked element by element. No mask operand (those calls take attention.cuh).

#include <kiln/attention_common.cuh>
#include <kiln/attention_epilogue.cuh>
#include <kiln/attention_prologue.cuh>
#include <kiln/attention_sm90_items.cuh>
#include <kiln/attention_sm90_softmax.cuh>
#include <kiln/grid_dependency.cuh>
#include <kiln/tma.cuh>
#include <kiln/wgmma.cuh>

namespace kiln::attention {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace sm90 {

/// BN rows of K or V from key `row` of head `hkv` into a stage at `dst`, landing on `full`.
template <class B, int BN>
__device__ __forceinline__ void load_keys(unsigned char* dst, const TensorMap* map,
                                          unsigned long long* full, int row, int hkv,
                                          const Work& w) {
  tma::arrive_expect_bytes(full, B::kKv);
#pragma unroll
  for (int a = 0; a < B::kAtoms; ++a)
    tma::load_5d(dst + a * BN * 128, map, a * 64, row, hkv, w.b2, w.b1, full);
}

/// The producer thread: each of the block's items (Items: `source`) into the slot of its Q tile
/// once both groups are done with the tile's last item (a block's items are numbered on:
/// `seq`), its Q where it has keys (not with LoadQ false, where the consumers compute it), then
/// each tile's K and V once both groups released the stage (the ring's uses numbered on across
/// items: `it`), so the next item's loads run under this one's last products and its store;
/// then the end (`source.items`) into the next slot.
template <class B, int BN, int Stages, bool LoadQ, class Source, class WorkOf>
__device__ __forceinline__ void produce(const B& sm, const Source& source, WorkOf work_of,
                                        const TensorMap* map_q, const TensorMap* map_k,
                                        const TensorMap* map_v, int group) {
  int it = 0, item = source.first();
  for (int seq = 0;; ++seq) {
    const int b = seq % B::kQTiles, use = seq / B::kQTiles;
    if (use > 0) tma::barrier_wait(sm.q_free(b), unsigned(use - 1) & 1);
    *sm.item(b) = item < source.items ? item : source.items;
    if (item >= source.items) {
      tma::arrive(sm.q_full(b));
      break;
    }
    const Work w = work_of(item);
    item = source.after(item);  // drawn now: a dynamic draw's latency under this item's loads
    if (LoadQ && w.tiles > 0) {
      tma::arrive_expect_bytes(sm.q_full(b), B::kQ);
#pragma unroll
      for (int a = 0; a < B::kAtoms; ++a)
        tma::load_5d(sm.q(b) + a * B::kRows * 128, map_q, a * 64, w.m0, w.h, w.b2, w.b1,
                     sm.q_full(b));
    } else {
      tma::arrive(sm.q_full(b));
    }
    const int hkv = w.h / group;
#pragma unroll 1
    for (int n = 0; n < w.tiles; ++n, ++it) {
      const int s = it % Stages;
      const unsigned used = unsigned(it / Stages - 1) & 1;
      if (it >= Stages) tma::barrier_wait(sm.k_free(s), used);
      load_keys<B, BN>(sm.k + s * B::kKv, map_k, sm.k_full(s), n * BN, hkv, w);
      if (it >= Stages) tma::barrier_wait(sm.v_free(s), used);
      load_keys<B, BN>(sm.v + s * B::kKv, map_v, sm.v_full(s), n * BN, hkv, w);
    }
  }
  source.finish();
}

/// S (this group's 64 rows x BN keys) = Q K^T for Q tile qb and the K tile of stage s, issued and
/// committed.
template <class T, class B, int BN>
__device__ __forceinline__ void issue_scores(float (&sc)[BN / 2], const B& sm, int qb, int s,
                                             int c) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < B::kDp / 16; ++kk) {
    const unsigned char* a = sm.q(qb) + kk / 4 * B::kRows * 128 + c * 64 * 128 + kk % 4 * 32;
    const unsigned char* b = sm.k + s * B::kKv + kk / 4 * BN * 128 + kk % 4 * 32;
    wgmma::Wgmma<T, BN>::template run<0>(sc, wgmma::descriptor(a, 16, 1024),
                                         wgmma::descriptor(b, 16, 1024), kk > 0);
  }
  wgmma::commit();
}

/// O += P V for the V tile of stage s, P as A fragments in registers: issued and committed.
template <class T, class B, int BN>
__device__ __forceinline__ void issue_values(float (&o)[B::kDp / 2],
                                             const unsigned (&pf)[BN / 16][4], const B& sm, int s) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    const unsigned char* b = sm.v + s * B::kKv + kk * 16 * 128;
    wgmma::WgmmaRs<T, B::kDp>::template run<1>(o, pf[kk], wgmma::descriptor(b, BN * 128, 1024), 1);
  }
  wgmma::commit();
}

/// The two consumer groups take turns at the tensor cores (named barriers 1 and 2, both groups'
/// 256 threads): each issues its products, then passes the turn and runs its softmax while the
/// other's products run.
__device__ __forceinline__ void wait_turn(int c) {
  asm volatile("bar.sync %0, 256;" ::"r"(1 + c) : "memory");
}
/// Passes the turn where `yes` (predicated, not branched around).
__device__ __forceinline__ void pass_turn(int c, bool yes) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p bar.arrive %0, 256;\n}" ::"r"(2 - c),
               "r"(int(yes))
               : "memory");
}

/// Arrives on `bar` where `yes`, without a branch (a branch inside a product's pipeline stage
/// makes ptxas serialize the products).
__device__ __forceinline__ void arrive_if(unsigned long long* bar, bool yes) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}" ::
          "r"(tma::shared_address(bar)),
      "r"(int(yes))
      : "memory");
}

/// The scores of tile n (keys n BN ..) to probabilities: the edge tiles masked, then the online
/// softmax's first half.
template <bool Causal, int BN>
__device__ __forceinline__ void tile_probabilities(float (&sc)[BN / 2], float (&mx)[2],
                                                   float (&l)[2], float (&alpha)[2],
                                                   const Params& p, const Work& w, int n, int c,
                                                   int i0, int t) {
  const int n0 = n * BN, rows0 = w.m0 + c * 64;
  const bool edge = n0 + BN > w.skv || (Causal && n0 + BN - 1 > rows0 + w.diag);
  if (edge) mask_tile<Causal, BN>(sc, w.skv, w.diag, i0, n0 + 2 * t);
  // 4 chains where the tile's n8 steps divide by 4 (every width the path takes), else 2.
  constexpr int kChains = BN / 8 % 4 != 0 ? 2 : 4;
  softmax_tile<BN, kChains>(sc, mx, l, alpha, p.scale_log2);
}

/// kv_lens: the last V tile's rows past the batch's keys zeroed where the tensor has rows there
/// (NaN in a cache's unused rows survives a probability of 0); both groups, then barrier 5.
template <class B, int BN>
__device__ __forceinline__ void zero_past_keys(unsigned char* v, const Params& p, const Work& w) {
  const int keys = w.skv - (w.tiles - 1) * BN, per_atom = (BN - keys) * 8;
  if (keys >= BN || w.skv >= p.skv) return;  // the item's: both groups or neither
  for (int i = int(threadIdx.x) - 128; i < per_atom * B::kAtoms; i += 256)  // rows: swizzle-safe
    *reinterpret_cast<uint4*>(v + i / per_atom * BN * 128 + (keys + i % per_atom / 8) * 128 +
                              i % 8 * 16) = uint4{};
  tma::fence_shared_async();  // for the tensor cores
  asm volatile("bar.sync 5, 256;" ::: "memory");
}

/// The running state of a consumer thread's two rows over one item.
template <int BN, int Dp>
struct Rows {
  float o[Dp / 2], mx[2], l[2];
  unsigned pf[BN / 16][4];  ///< the last tile's P, packed
  int i0;                   ///< the first of the thread's rows (and i0 + 8)
};

/// Consumer group c (0 or 1) over one item's tiles (its Q in tile qb), the ring's uses from `it`.
/// In its turn at tile n it issues S(n) = Q K(n)^T, then O += P(n - 1) V(n - 1); it passes the
/// turn, waits for S(n) (after the last, its Q tile is free: the producer then reuses the tile's
/// slot and, where it loads Q, the tile) and runs the softmax of it under the P V product, then
/// waits for that, rescales O and packs P(n); the last P V closes the item (its Q tile freed
/// after the last S where `free_q`, else by the caller). Tile 0 (no P V before
/// it) is peeled off the loop: ptxas keeps the products pipelined only where no branch lies between
/// a product and its wait.
template <class T, int BN, int Stages, bool Causal, bool Lens, class B>
__device__ __forceinline__ void run_item(Rows<BN, B::kDp>& x, const Params& p, const B& sm,
                                         const Work& w, int qb, int it, int c, int tid,
                                         bool free_q) {
  const int t = tid & 3;
  const bool leader = tid % 128 == 0;
  float alpha[2];
  {
    tma::barrier_wait(sm.k_full(it % Stages), unsigned(it / Stages) & 1);
    float sc[BN / 2];
    wait_turn(c);
    issue_scores<T, B, BN>(sc, sm, qb, it % Stages, c);
    pass_turn(c, true);
    wgmma::wait<0>();
    wgmma::fence_operands(sc);
    arrive_if(sm.k_free(it % Stages), leader);
    arrive_if(sm.q_free(qb), leader && free_q && w.tiles == 1);
    tile_probabilities<Causal, BN>(sc, x.mx, x.l, alpha, p, w, 0, c, x.i0, t);
    rescale_and_pack<T, BN, B::kDp>(x.o, x.pf, sc, alpha);
  }
#pragma unroll 1
  for (int n = 1; n < w.tiles; ++n) {
    const int s = (it + n) % Stages, before = (it + n - 1) % Stages;
    tma::barrier_wait(sm.k_full(s), unsigned((it + n) / Stages) & 1);
    tma::barrier_wait(sm.v_full(before), unsigned((it + n - 1) / Stages) & 1);
    // Not carried from the last tile (its first product ignores it): a carried value would take
    // copies into these registers while a product runs, which serializes the products.
    float sc[BN / 2];
    wgmma::fence_operands(x.o);  // rescaled, and P packed, before the products are issued
    wgmma::fence_operands(x.pf);
    wait_turn(c);
    issue_scores<T, B, BN>(sc, sm, qb, s, c);
    issue_values<T, B, BN>(x.o, x.pf, sm, before);
    pass_turn(c, true);
    wgmma::wait<1>();
    wgmma::fence_operands(sc);
    arrive_if(sm.k_free(s), leader);
    arrive_if(sm.q_free(qb), leader && free_q && n + 1 == w.tiles);
    tile_probabilities<Causal, BN>(sc, x.mx, x.l, alpha, p, w, n, c, x.i0, t);
    wgmma::wait<0>();  // P(n - 1) V(n - 1): P's registers and V's stage are free
    wgmma::fence_operands(x.o);
    wgmma::fence_operands(x.pf);
    arrive_if(sm.v_free(before), leader);
    rescale_and_pack<T, BN, B::kDp>(x.o, x.pf, sc, alpha);
  }
  const int last = (it + w.tiles - 1) % Stages;
  tma::barrier_wait(sm.v_full(last), unsigned((it + w.tiles - 1) / Stages) & 1);
  if constexpr (Lens) zero_past_keys<B, BN>(sm.v + last * B::kKv, p, w);
  wgmma::fence_operands(x.o);
  wgmma::fence_operands(x.pf);
  issue_values<T, B, BN>(x.o, x.pf, sm, last);
  wgmma::wait<0>();
  wgmma::fence_operands(x.o);
  wgmma::fence_operands(x.pf);
  arrive_if(sm.v_free(last), leader);
}

/// Consumer group c over the block's items, as the producer hands them on (each in its Q tile's
/// slot, until the end): each item's rows from zero, its tiles (run_item; an item without keys
/// frees its Q tile at once and writes zeros), its output. The groups take turns at the tensor
/// cores (named barriers 1 and 2): group 1 passes the first turn once and then after each of its
/// turns; group 0 takes one turn more at the end, so each barrier's waits and arrivals match.
template <class T, int D, int BN, int Stages, bool Causal, bool Lens, class Epi, class Pro, class B,
          class WorkOf>
__device__ __forceinline__ void consume(const Params& p, const B& sm, int items, WorkOf work_of,
                                        int c, int tid) {
  const int lane = tid & 31, warp = (tid / 32) % 4;
  const bool leader = tid % 128 == 0;
  if (c == 1) pass_turn(c, true);
  int it = 0;
  for (int seq = 0;; ++seq) {
    const int qb = seq % B::kQTiles, use = seq / B::kQTiles;
    tma::barrier_wait(sm.q_full(qb), unsigned(use) & 1);
    // Only the group's first thread reads the producer's slot, the thread that arrives when the
    // item's tiles are done with it; the group reads its copy. Lane 0's read, broadcast: the
    // compiler then knows the item (and each loop bound drawn from it) is the warp's, and keeps
    // the tile loop free of reconvergence code.
    if (leader) *sm.copy(c, qb) = *sm.item(qb);
    asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");
    const int item = __shfl_sync(0xffffffffu, lane == 0 ? *sm.copy(c, qb) : 0, 0);
    if (item >= items) break;
    const Work w = work_of(item);
    Rows<BN, B::kDp> x;
    x.i0 = w.m0 + c * 64 + warp * 16 + (lane >> 2);
    // Stored through the group's rows of the Q tile where they fit and the other tile holds the
    // next item's Q meanwhile; the tile is then freed after the store, not after the last S.
    const auto out = [&] { return reinterpret_cast<T*>(p.ptr[config::kOut]) + w.out; };
    // (Not with kv_lens at BN 160, whose tiles leave no register for it: 4 bytes spilled.)
    constexpr bool kStaged = !HasEpilogue<Epi>::value && B::kQTiles > 1 && !(Lens && BN > 128);
    const auto staged = [&] {  // computed where used: a value kept over the tiles spilled
      return kStaged && w.tiles > 0 && p.ptr[config::kOut] != 0 &&
             staged_fits<T, D>(out(), p.s[config::kOut]);
    };
    x.mx[0] = x.mx[1] = minus_infinity();
    x.l[0] = x.l[1] = 0.0f;
#pragma unroll
    for (int i = 0; i < B::kDp / 2; ++i) x.o[i] = 0.0f;
    if (w.tiles > 0) {
      if constexpr (HasPrologue<Pro>::value) {
        // This group's rows of Q, which only its own products (all waited for) read.
        const long long bq[config::kBatchDims] = {0, w.b1, w.b2};
        prologue_swizzled<T, Pro, Epi, D, B::kDp, B::kRows>(sm.q(qb), p, bq, w.h, w.m0, c,
                                                            tid % 128);
        tma::fence_shared_async();  // for the tensor cores
        asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");
      }
      run_item<T, BN, Stages, Causal, Lens, B>(x, p, sm, w, qb, it, c, tid, !staged());
      it += w.tiles;
    } else {
      // Every warp has read the copy before the leader writes the tile's next item there (where
      // the item has tiles, wait_turn's barrier orders that).
      asm volatile("bar.sync %0, 128;" ::"r"(3 + c) : "memory");
      arrive_if(sm.q_free(qb), leader);
    }
    const long long bi[config::kBatchDims] = {0, w.b1, w.b2};  // the path's batch dims
    if constexpr (HasEpilogue<Epi>::value)
      epilogue_rows<Epi, D, B::kDp / 8>(p, bi, w.h, x.i0, x.l, lane & 3,
                                        [&](int j, int e) { return x.o[4 * j + e]; });
    else if (staged())
      store_staged<T, D, B::kDp, B::kRows>(tma::shared_address(sm.q(qb)), out(),
                                           p.s[config::kOut].row, p.sq, w.m0 + c * 64, x.o, x.l, c,
                                           tid % 128);
    else if (p.ptr[config::kOut] != 0)
      store_rows<T, D, B::kDp>(out(), p.s[config::kOut], p.sq, x.i0, x.o, x.l, lane & 3);
    arrive_if(sm.q_free(qb), leader && staged());
    if (p.ptr[config::kLsePointer] != 0) {  // the maxima are raw scores: to log2 units
      const float m[2] = {x.mx[0] * p.scale_log2, x.mx[1] * p.scale_log2};
      store_lse_rows(p, tensor_offset(p, config::kLse, bi, w.h), x.i0, m, x.l, lane & 3);
    }
  }
  if (c == 0) wait_turn(c);
}

}  // namespace sm90
#endif

/// Parameters: Params (out's pointer, kv_lens' where Lens; q's, k's and v's slots unused), then
/// the tensor maps of q, k and v, each [D, rows, heads, batch dim 2, batch dim 1] innermost
/// first (config::Params::batch[0] is 1), boxes of 64 columns x 128 rows (q) or BN rows.
template <class T, class L, int D, int BN, int Stages, bool Causal, bool BottomRight, bool Lens,
          class Epi = void, class Pro = void>
__global__ void __launch_bounds__(config::kWgmmaThreads, 1)
    attention_sm90(const Params p, const __grid_constant__ TensorMap map_q,
                   const __grid_constant__ TensorMap map_k,
                   const __grid_constant__ TensorMap map_v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using B = sm90::Block<D, BN, Stages>;
  static_assert(D % 8 == 0 && D <= 256 && BN % 16 == 0 && Stages >= 2, "D, BN, Stages");
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  constexpr int kQs = B::kQTiles * B::kQ;
  const B sm{base, base + kQs, base + kQs + Stages * B::kKv,
             reinterpret_cast<unsigned long long*>(base + kQs + 2 * Stages * B::kKv)};
  const int tid = threadIdx.x, group = tid / 128;
  if (tid == 0) {
    for (int b = 0; b < B::kQTiles; ++b) {
      tma::barrier_init(sm.q_full(b), 1);
      tma::barrier_init(sm.q_free(b), 2);
    }
    for (int s = 0; s < Stages; ++s) {
      tma::barrier_init(sm.k_full(s), 1);
      tma::barrier_init(sm.k_free(s), 2);
      tma::barrier_init(sm.v_full(s), 1);
      tma::barrier_init(sm.v_free(s), 2);
    }
  }
  __syncthreads();
  wait_for_previous_grid();
  allow_next_grid();
  // Persistent blocks (LaunchConfig::persistent) draw several items each: causal calls from the
  // workspace's counter, the others b, b + gridDim.x, ... (attention_sm90_items.cuh).
  const sm90::Items<Causal> source{reinterpret_cast<unsigned*>(p.ptr[config::kWorkspace]),
                                   p.m_blocks * p.batches * p.heads};
  const auto work_of = [&](int item) {
    return sm90::work_of<BN, Lens, L, BottomRight, Causal>(p, item);
  };
  if (group == 0) {
    wgmma::registers_down<24>();
    if (tid == 0)
      sm90::produce<B, BN, Stages, !HasPrologue<Pro>::value>(sm, source, work_of, &map_q, &map_k,
                                                             &map_v, p.group);
  } else {
    wgmma::registers_up<240>();
    sm90::consume<T, D, BN, Stages, Causal, Lens, Epi, Pro, B>(p, sm, source.items, work_of,
                                                               group - 1, tid);
  }
#endif
}

}  // namespace kiln::attention
