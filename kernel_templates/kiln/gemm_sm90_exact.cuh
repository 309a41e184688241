#pragma once
// The consumers' main loop of gemm_sm90.cuh for an exact f32 product (to about 1e-6): three TF32
// products per term, lo(a) hi(b) + hi(a) lo(b) + hi(a) hi(b), where hi is a word with its low 13
// bits cleared (the TF32 value the tensor core reads from the word itself: it drops those bits)
// and lo = x - hi, exact in f32. A's fragments come from shared memory into registers, where
// each thread splits its own; B's rest is written beside B in the stage by three warps of the
// producer group, which otherwise idle (the consumers wait for it on the stage's split barrier).
// wgmma then reads only B from shared memory (the RS form), three times.
// A stage: A (128 rows of 128 bytes), B (BN rows), B's rest (BN rows).

#include <kiln/tma.cuh>
#include <kiln/wgmma.cuh>

namespace kiln::gemm {

/// A stage's barriers: its copies landed (full), B's rest written (split), both consumer groups
/// done with it (empty).
struct ExactBarriers {
  unsigned long long *full, *split, *empty;
};

__device__ __forceinline__ float tf32_rest(float x) {
  return x - __uint_as_float(__float_as_uint(x) & 0xffffe000u);
}

/// B's rest, `Bytes` after B in each stage, by the producer group's warps 1 to 3 (`t` of 96)
/// while the consumers multiply: the block's `uses` of the ring in order, each once its copies
/// landed; then the async proxy (wgmma) may read it, and the stage's `split` barrier says so.
template <int Bytes, int Stages, int kStage, int kTileA>
__device__ __forceinline__ void split_stages(unsigned char* smem, unsigned long long* full,
                                             unsigned long long* split, int uses, int t) {
  for (int it = 0; it < uses; ++it) {
    const int s = it % Stages;
    tma::barrier_wait(&full[s], (it / Stages) & 1);
    const float4* x4 = reinterpret_cast<const float4*>(smem + s * kStage + kTileA);
    float4* lo = reinterpret_cast<float4*>(smem + s * kStage + kTileA + Bytes);
#pragma unroll 2
    for (int j = t; j < Bytes / 16; j += 96) {
      const float4 x = x4[j];
      lo[j] = make_float4(tf32_rest(x.x), tf32_rest(x.y), tf32_rest(x.z), tf32_rest(x.w));
    }
    tma::fence_shared_async();
    tma::arrive(&split[s]);
  }
}

/// This thread's words of A for k8 step `kk`: rows r and r + 8, columns 8 kk + t and + 4 of the
/// stage's A tile (128-byte rows, 16-byte chunks swizzled by row % 8, as TMA writes them).
__device__ __forceinline__ void a_words(unsigned (&f)[4], const unsigned char* a, int r, int kk,
                                        int t) {
  auto at = [a](int row, int k) {
    return *reinterpret_cast<const unsigned*>(a + row * 128 + (((k >> 2) ^ (row & 7)) << 4) +
                                              (k & 3) * 4);
  };
  const int k = 8 * kk + t;
  f[0] = at(r, k), f[1] = at(r + 8, k), f[2] = at(r, k + 4), f[3] = at(r + 8, k + 4);
}

/// Stage `kt` of the consumer group's products (registers of parity P for A's words), the ring's
/// use `it0 + kt`: waits for its copies, splits, issues its products, then waits for the stage
/// before and releases it.
template <int P, int BN, int Stages, int kStage, int kTileA, int kTileB>
__device__ __forceinline__ void exact_stage(float (&acc)[BN / 2], unsigned (&hi)[2][4][4],
                                            unsigned (&lo)[2][4][4], unsigned char* smem,
                                            const ExactBarriers& bars, int it0, int kt, int r,
                                            int t, int tid) {
  const int it = it0 + kt, s = it % Stages;
  tma::barrier_wait(&bars.full[s], (it / Stages) & 1);
  unsigned char* st = smem + s * kStage;
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    a_words(hi[P][kk], st, r, kk, t);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      lo[P][kk][i] = __float_as_uint(tf32_rest(__uint_as_float(hi[P][kk][i])));
  }
  tma::barrier_wait(&bars.split[s], (it / Stages) & 1);  // B's rest is there
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const unsigned long long b = wgmma::descriptor(st + kTileA + kk * 32, 16, 1024);
    const unsigned long long b_lo = wgmma::descriptor(st + kTileA + kTileB + kk * 32, 16, 1024);
    wgmma::WgmmaTf32Rs<BN>::run(acc, lo[P][kk], b, 1);  // the small terms first
    wgmma::WgmmaTf32Rs<BN>::run(acc, hi[P][kk], b_lo, 1);
    wgmma::WgmmaTf32Rs<BN>::run(acc, hi[P][kk], b, 1);
  }
  wgmma::commit();
  wgmma::wait<1>();  // the stage before is done: its registers and its stage are free
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) wgmma::hold(hi[1 - P][kk]), wgmma::hold(lo[1 - P][kk]);
  // The stage before goes back to the producer: its A words were loaded into registers and used
  // before this point, and its B only through wgmma, all complete, so TMA's refill cannot
  // overwrite anything still unread.
  if (kt > 0 && tid % 128 == 0) tma::arrive(&bars.empty[(it - 1) % Stages]);
}

/// The consumer group `c`'s products over `ktiles` stages of the ring (an even count: the
/// producer pads an odd one with a stage of zeros), the ring's uses it0.., into `acc` (its 64
/// rows of the block's 128 x BN tile): one stage's products in flight, the stage before
/// released, and the last released at the end.
/// A's registers alternate between two sets by stage so that those of the stage in flight hold.
template <int BN, int Stages, int kStage, int kTileA, int kTileB>
__device__ __forceinline__ void exact_products(float (&acc)[BN / 2], unsigned char* smem,
                                               const ExactBarriers& bars, int it0, int ktiles,
                                               int c, int tid) {
  unsigned hi[2][4][4] = {}, lo[2][4][4] = {};  // per parity and k8 step: A's words, their rests
  const int lane = tid & 31, r = c * 64 + (tid / 32) % 4 * 16 + (lane >> 2), t = lane & 3;
  for (int kt = 0; kt < ktiles; kt += 2) {  // an even count: a stage under a branch would make
                                            // ptxas serialize every product
    exact_stage<0, BN, Stages, kStage, kTileA, kTileB>(acc, hi, lo, smem, bars, it0, kt, r, t, tid);
    exact_stage<1, BN, Stages, kStage, kTileA, kTileB>(acc, hi, lo, smem, bars, it0, kt + 1, r, t,
                                                       tid);
  }
  wgmma::wait<0>();
  if (ktiles > 0 && tid % 128 == 0) tma::arrive(&bars.empty[(it0 + ktiles - 1) % Stages]);
#pragma unroll
  for (int p = 0; p < 2; ++p)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma::hold(hi[p][kk]), wgmma::hold(lo[p][kk]);
}

}  // namespace kiln::gemm
