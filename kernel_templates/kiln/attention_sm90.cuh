#pragma once
// Attention on sm_90a in the manner of FlashAttention-3: a block takes 128 query rows of one
// (batch, head); one thread of a producer warpgroup loads Q once and tiles of BN keys and
// values through a ring of Stages stages with TMA (each tensor a 5-d map [D, rows, heads, two
// batch dims], so strided views are read in place; D padded to 64 columns and rows past the
// tensor arrive as zeros); two consumer warpgroups take 64 rows each: S = Q K^T by wgmma from
// shared memory, the online softmax on S's accumulators in registers (f32, log2 units; the
// scale must be above 0), then O += P V by wgmma with P straight from those registers (the
// register-A form: a score accumulator's fragment is the A fragment of a 16-bit product). The two groups take turns at
// the tensor cores: one issues its tile's Q K^T and the previous tile's P V, then runs its
// softmax while the other's products run (ping-pong, ordered by named barriers). The K and V
// stages are released as soon as both groups' products that read them are done (full and
// empty mbarriers per stage, K and V apart so that Q K^T starts before V lands). Causal blocks
// stop at the last tile their rows see and the longest run first; only tiles that cross the
// diagonal or the batch's last key are masked element by element. No mask operand (those calls take attention.cuh).

#include <kiln/attention.cuh>
#include <kiln/attention_common.cuh>
#include <kiln/grid_dependency.cuh>
#include <kiln/tma.cuh>
#include <kiln/wgmma.cuh>

namespace kiln::attention {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace sm90 {

/// The block's shared memory (attention_config.cuh's layout) and where one tile's work lies.
template <int D, int BN, int Stages>
struct Block {
  static constexpr int kDp = config::wgmma_d(D), kAtoms = kDp / 64;
  static constexpr int kRows = config::kWgmmaRows;
  static constexpr int kQ = config::wgmma_tile_bytes(kRows, D);
  static constexpr int kKv = config::wgmma_tile_bytes(BN, D);
  unsigned char* q;
  unsigned char* k;  // stage s at k + s * kKv, V's after all of K's
  unsigned char* v;
  unsigned long long* bars;  // Q landed, then per stage: K landed, K free, V landed, V free

  __device__ __forceinline__ unsigned long long* q_full() const { return bars; }
  __device__ __forceinline__ unsigned long long* k_full(int s) const { return bars + 1 + s; }
  __device__ __forceinline__ unsigned long long* k_free(int s) const {
    return bars + 1 + Stages + s;
  }
  __device__ __forceinline__ unsigned long long* v_full(int s) const {
    return bars + 1 + 2 * Stages + s;
  }
  __device__ __forceinline__ unsigned long long* v_free(int s) const {
    return bars + 1 + 3 * Stages + s;
  }
};

/// A block's share: its first query row, its (batch, head) pair, the maps' coordinates of its
/// batch dims, and the tiles of keys it reads.
struct Work {
  int m0, h, b1, b2, tiles;
  Pair r;
};

/// The producer thread: Q, then each tile's K and V once both groups released the stage.
template <class B, int BN, int Stages>
__device__ __forceinline__ void produce(const B& sm, const Work& w, const TensorMap* map_q,
                                        const TensorMap* map_k, const TensorMap* map_v,
                                        int group) {
  if (w.tiles == 0) return;
  tma::arrive_expect_bytes(sm.q_full(), B::kQ);
#pragma unroll
  for (int a = 0; a < B::kAtoms; ++a)
    tma::load_5d(sm.q + a * B::kRows * 128, map_q, a * 64, w.m0, w.h, w.b2, w.b1, sm.q_full());
  const int hkv = w.h / group;
#pragma unroll 1
  for (int n = 0; n < w.tiles; ++n) {
    const int s = n % Stages;
    const unsigned used = unsigned(n / Stages - 1) & 1;
    if (n >= Stages) tma::barrier_wait(sm.k_free(s), used);
    tma::arrive_expect_bytes(sm.k_full(s), B::kKv);
#pragma unroll
    for (int a = 0; a < B::kAtoms; ++a)
      tma::load_5d(sm.k + s * B::kKv + a * BN * 128, map_k, a * 64, n * BN, hkv, w.b2, w.b1,
                   sm.k_full(s));
    if (n >= Stages) tma::barrier_wait(sm.v_free(s), used);
    tma::arrive_expect_bytes(sm.v_full(s), B::kKv);
#pragma unroll
    for (int a = 0; a < B::kAtoms; ++a)
      tma::load_5d(sm.v + s * B::kKv + a * BN * 128, map_v, a * 64, n * BN, hkv, w.b2, w.b1,
                   sm.v_full(s));
  }
}

/// S (this group's 64 rows x BN keys) = Q K^T for the K tile of stage s, issued and committed.
template <class T, class B, int BN>
__device__ __forceinline__ void issue_scores(float (&sc)[BN / 2], const B& sm, int s, int c) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < B::kDp / 16; ++kk) {
    const unsigned char* a = sm.q + kk / 4 * B::kRows * 128 + c * 64 * 128 + kk % 4 * 32;
    const unsigned char* b = sm.k + s * B::kKv + kk / 4 * BN * 128 + kk % 4 * 32;
    wgmma::Wgmma<T, BN>::template run<0>(sc, wgmma::descriptor(a, 16, 1024),
                                         wgmma::descriptor(b, 16, 1024), kk > 0);
  }
  wgmma::commit();
}

/// O += P V for the V tile of stage s, P as A fragments in registers: issued and committed.
template <class T, class B, int BN>
__device__ __forceinline__ void issue_values(float (&o)[B::kDp / 2], const unsigned (&pf)[BN / 16][4],
                                             const B& sm, int s) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    const unsigned char* b = sm.v + s * B::kKv + kk * 16 * 128;
    wgmma::WgmmaRs<T, B::kDp>::template run<1>(o, pf[kk], wgmma::descriptor(b, BN * 128, 1024), 1);
  }
  wgmma::commit();
}

/// An edge tile's raw scores: -inf for keys past the batch's last or past the causal diagonal
/// of the thread's rows i0 and i0 + 8 (keys from c0: 8 j + 2 t). Only tiles that cross one take
/// this: on the others the per-element tests were half the softmax's instructions.
template <bool Causal, int BN>
__device__ __forceinline__ void mask_tile(float (&sc)[BN / 2], const Pair& r, int i0, int c0) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = i0 + (e >> 1) * 8, key = c0 + 8 * j + (e & 1);
      if (key >= r.skv || (Causal && key > i + r.diag)) sc[4 * j + e] = minus_infinity();
    }
}

/// 2^x by the multifunction unit alone (subnormal results flush to zero: a probability below
/// 2^-126 of the row's largest adds nothing a 16-bit P keeps).
__device__ __forceinline__ float exp2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

/// The online softmax's first half over one tile of raw scores (a quad of lanes holds a row;
/// `scale` in log2 units, above 0, so the raw max is the scaled one's): each of the thread's two
/// rows' new max (raw), the scores replaced by their probabilities exp2(x scale - max scale), one
/// FFMA and one MUFU each, the sums updated; `alpha` what the output must be scaled by (outputs
/// are left alone: a product may still be adding to them). Maxima and sums run in 4 chains a
/// row: one warp a scheduler does this while the other group's products run, so a single chain
/// of 64 dependent adds would be its latency, not its issue, that sets the time.
template <int BN>
__device__ __forceinline__ void softmax_tile(float (&sc)[BN / 2], float (&mx)[2], float (&l)[2],
                                             float (&alpha)[2], float scale) {
  static_assert(BN % 32 == 0 || BN == 96 || BN == 160, "n8 steps in fours or twos");
  constexpr int kChains = BN / 8 % 4 == 0 ? 4 : 2;
  float m[2][kChains], sum[2][kChains];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int c = 0; c < kChains; ++c) m[h][c] = mx[h], sum[h][c] = 0.0f;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      m[h][j % kChains] =
          fmaxf(m[h][j % kChains], fmaxf(sc[4 * j + 2 * h], sc[4 * j + 2 * h + 1]));
  float base[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float r = m[h][0];
#pragma unroll
    for (int c = 1; c < kChains; ++c) r = fmaxf(r, m[h][c]);
    r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, 1));
    r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, 2));
    base[h] = r == minus_infinity() ? 0.0f : r * scale;
    alpha[h] = mx[h] == minus_infinity() ? 0.0f : exp2_ftz(mx[h] * scale - base[h]);
    mx[h] = r;
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int h = e >> 1;
      const float pr = exp2_ftz(fmaf(sc[4 * j + e], scale, -base[h]));
      sc[4 * j + e] = pr;
      sum[h][j % kChains] += pr;
    }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float r = sum[h][0];
#pragma unroll
    for (int c = 1; c < kChains; ++c) r += sum[h][c];
    l[h] = l[h] * alpha[h] + r;
  }
}

/// The second half, once no product adds to the outputs: the outputs rescaled, the
/// probabilities packed as the A fragments of P V (keys 16 kk .. 16 kk + 15 are the n8 steps
/// 2 kk and 2 kk + 1: mma.sync's A fragment).
template <class T, int BN, int Dp>
__device__ __forceinline__ void rescale_and_pack(float (&o)[Dp / 2], unsigned (&pf)[BN / 16][4],
                                                 const float (&sc)[BN / 2],
                                                 const float (&alpha)[2]) {
  // Late in a row the max rarely moves: a warp whose 16 rows all kept theirs skips the FMULs.
  if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
    for (int j = 0; j < Dp / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[4 * j + e] *= alpha[e >> 1];
  }
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) pf[kk][i] = pack2<T>(sc[8 * kk + 2 * i], sc[8 * kk + 2 * i + 1]);
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

/// The thread's output rows i0 and i0 + 8, divided by their sums (0 for a row that saw no key);
/// columns from D on (the padding) and rows from Sq on are not written.
template <class T, int D, int Dp>
__device__ __forceinline__ void store_rows(T* out, const config::Strides& so, int sq, int i0,
                                           const float (&o)[Dp / 2], const float (&l)[2], int t) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const int i = i0 + 8 * h;
    if (i >= sq) continue;
#pragma unroll
    for (int j = 0; j < Dp / 8; ++j) {
      const int col = 8 * j + 2 * t;
      if (col >= D) continue;
      T* at = out + (long long)i * so.row + (long long)col * so.col;
      at[0] = from_float<T>(o[4 * j + 2 * h] * inv);
      at[so.col] = from_float<T>(o[4 * j + 2 * h + 1] * inv);
    }
  }
}

/// store_rows into the call's output.
template <class T, int D, int Dp>
__device__ __forceinline__ void store_output(const Params& p, const Work& w, int i0,
                                             const float (&o)[Dp / 2], const float (&l)[2],
                                             int t) {
  store_rows<T, D, Dp>(reinterpret_cast<T*>(p.ptr[config::kOut]) + w.r.off[config::kOut],
                       p.s[config::kOut], p.sq, i0, o, l, t);
}

/// Arrives on `bar` where `yes`, without a branch (a branch inside a product's pipeline stage
/// makes ptxas serialize the products).
__device__ __forceinline__ void arrive_if(unsigned long long* bar, bool yes) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}"
               ::"r"(tma::shared_address(bar)), "r"(int(yes))
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
  const bool edge = n0 + BN > w.r.skv || (Causal && n0 + BN - 1 > rows0 + w.r.diag);
  if (edge) mask_tile<Causal, BN>(sc, w.r, i0, n0 + 2 * t);
  softmax_tile<BN>(sc, mx, l, alpha, p.scale_log2);
}

/// Consumer group c (0 or 1): its 64 rows over the block's tiles, then its output. In its turn
/// at tile n it issues S(n) = Q K(n)^T, then O += P(n - 1) V(n - 1); it passes the turn, waits
/// for S(n) and runs the softmax of it under the P V product, then waits for that, rescales O
/// and packs P(n). Group 1 gives group 0 the first turn and keeps its last (the counts of each
/// barrier's waits and arrivals match). Tile 0 (no P V before it) is peeled off the loop: ptxas
/// keeps the products pipelined only where no branch lies between a product and its wait.
template <class T, int D, int BN, int Stages, bool Causal, class B>
__device__ __forceinline__ void consume(const Params& p, const B& sm, const Work& w, int c,
                                        int tid) {
  const int lane = tid & 31, warp = (tid / 32) % 4, t = lane & 3;
  const int i0 = w.m0 + c * 64 + warp * 16 + (lane >> 2);  // and i0 + 8
  const bool leader = tid % 128 == 0;
  float o[B::kDp / 2], mx[2] = {minus_infinity(), minus_infinity()}, l[2] = {0, 0}, alpha[2];
  unsigned pf[BN / 16][4];
#pragma unroll
  for (int i = 0; i < B::kDp / 2; ++i) o[i] = 0.0f;
  if (w.tiles == 0) return store_output<T, D, B::kDp>(p, w, i0, o, l, t);
  if (c == 1) pass_turn(c, true);
  tma::barrier_wait(sm.q_full(), 0);
  {
    tma::barrier_wait(sm.k_full(0), 0);
    float sc[BN / 2];
    wait_turn(c);
    issue_scores<T, B, BN>(sc, sm, 0, c);
    pass_turn(c, c == 0 || w.tiles > 1);
    wgmma::wait<0>();
    wgmma::fence_operands(sc);
    arrive_if(sm.k_free(0), leader);
    tile_probabilities<Causal, BN>(sc, mx, l, alpha, p, w, 0, c, i0, t);
    rescale_and_pack<T, BN, B::kDp>(o, pf, sc, alpha);
  }
#pragma unroll 1
  for (int n = 1; n < w.tiles; ++n) {
    const int s = n % Stages, before = (n - 1) % Stages;
    tma::barrier_wait(sm.k_full(s), unsigned(n / Stages) & 1);
    tma::barrier_wait(sm.v_full(before), unsigned((n - 1) / Stages) & 1);
    // Not carried from the last tile (its first product ignores it): a carried value would take
    // copies into these registers while a product runs, which serializes the products.
    float sc[BN / 2];
    wgmma::fence_operands(o);  // rescaled, and P packed, before the products are issued
    wgmma::fence_operands(pf);
    wait_turn(c);
    issue_scores<T, B, BN>(sc, sm, s, c);
    issue_values<T, B, BN>(o, pf, sm, before);
    pass_turn(c, c == 0 || n + 1 < w.tiles);
    wgmma::wait<1>();
    wgmma::fence_operands(sc);
    arrive_if(sm.k_free(s), leader);
    tile_probabilities<Causal, BN>(sc, mx, l, alpha, p, w, n, c, i0, t);
    wgmma::wait<0>();  // P(n - 1) V(n - 1): P's registers and V's stage are free
    wgmma::fence_operands(o);
    wgmma::fence_operands(pf);
    arrive_if(sm.v_free(before), leader);
    rescale_and_pack<T, BN, B::kDp>(o, pf, sc, alpha);
  }
  const int last = (w.tiles - 1) % Stages;
  tma::barrier_wait(sm.v_full(last), unsigned((w.tiles - 1) / Stages) & 1);
  wgmma::fence_operands(o);
  wgmma::fence_operands(pf);
  issue_values<T, B, BN>(o, pf, sm, last);
  wgmma::wait<0>();
  wgmma::fence_operands(o);
  wgmma::fence_operands(pf);
  store_output<T, D, B::kDp>(p, w, i0, o, l, t);
}

/// The block's share of the launch (block_work's order).
template <int BN, bool Lens, class L, bool BottomRight, bool Causal>
__device__ __forceinline__ Work work_of(const Params& p) {
  int pair, m_block;
  block_work(p, int(blockIdx.x), pair, m_block);
  const int b = pair / p.heads;
  Work w;
  w.h = pair % p.heads;
  w.m0 = m_block * config::kWgmmaRows;
  w.b2 = int(b % p.batch[2]);
  w.b1 = int(b / p.batch[2] % p.batch[1]);
  w.r = locate<Lens, L, BottomRight>(p, b, w.h);
  w.tiles = (key_end<Causal>(w.r, w.m0, config::kWgmmaRows) + BN - 1) / BN;
  return w;
}

}  // namespace sm90
#endif

/// Parameters: Params (out's pointer, kv_lens' where Lens; q's, k's and v's slots unused), then
/// the tensor maps of q, k and v, each [D, rows, heads, batch dim 2, batch dim 1] innermost
/// first (config::Params::batch[0] is 1), boxes of 64 columns x 128 rows (q) or BN rows.
template <class T, class L, int D, int BN, int Stages, bool Causal, bool BottomRight, bool Lens>
__global__ void __launch_bounds__(config::kWgmmaThreads, 1)
    attention_sm90(const Params p, const __grid_constant__ TensorMap map_q,
                   const __grid_constant__ TensorMap map_k, const __grid_constant__ TensorMap map_v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using B = sm90::Block<D, BN, Stages>;
  static_assert(D % 8 == 0 && D <= 256 && BN % 16 == 0 && Stages >= 2, "D, BN, Stages");
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  const B sm{base, base + B::kQ, base + B::kQ + Stages * B::kKv,
             reinterpret_cast<unsigned long long*>(base + B::kQ + 2 * Stages * B::kKv)};
  const int tid = threadIdx.x, group = tid / 128;
  if (tid == 0) {
    tma::barrier_init(sm.q_full(), 1);
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
  const sm90::Work w = sm90::work_of<BN, Lens, L, BottomRight, Causal>(p);
  if (group == 0) {
    wgmma::registers_down<24>();
    if (tid == 0) sm90::produce<B, BN, Stages>(sm, w, &map_q, &map_k, &map_v, p.group);
  } else {
    wgmma::registers_up<240>();
    sm90::consume<T, D, BN, Stages, Causal, B>(p, sm, w, group - 1, tid);
  }
#endif
}

}  // namespace kiln::attention
