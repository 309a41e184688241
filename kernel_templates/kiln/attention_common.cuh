#pragma once
// What both attention kernels (attention.cuh, attention_rows.cuh) share: where a (batch, head)
// pair's tensors start, how many keys it has, and which keys a query row sees.

#include <kiln/attention_config.cuh>
#include <kiln/dtype.cuh>

namespace kiln::attention {

using config::Params;

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float minus_infinity() { return __int_as_float(0xff800000u); }

/// Mask kinds: none, added to the scores (after the scale), or a bool mask (true: attends).
enum MaskKind { kNoMask = 0, kAdditive = 1, kBoolMask = 2 };

/// One (batch, head) pair: its tensors' element offsets (per config::Tensor), its keys (kv_lens
/// clamped to [0, Skv]) and the causal diagonal (row i sees keys j <= i + diag).
struct Pair {
  long long off[config::kTensors];
  int skv;
  int diag;
  int b, h;  ///< the batch and (first) query head it was located for
};

/// Batch `b`'s index along each batch dim.
__device__ __forceinline__ void batch_index(const Params& p, int b,
                                            long long (&bi)[config::kBatchDims]) {
  long long rest = b;
#pragma unroll
  for (int d = config::kBatchDims - 1; d >= 0; --d) {
    bi[d] = rest % p.batch[d];
    rest /= p.batch[d];
  }
}

/// Where tensor `t`'s (batch `bi`, head `head`) starts, in elements.
__device__ __forceinline__ long long tensor_offset(const Params& p, int t,
                                                   const long long (&bi)[config::kBatchDims],
                                                   int head) {
  long long o = head * p.s[t].head;
#pragma unroll
  for (int d = 0; d < config::kBatchDims; ++d) o += bi[d] * p.s[t].batch[d];
  return o;
}

/// Where query head `h` of batch `b` starts in the lse: worked out where a kernel stores it, as
/// an offset kept from the start would hold two registers through its loop.
__device__ __forceinline__ long long lse_offset(const Params& p, int b, int h) {
  long long bi[config::kBatchDims];
  batch_index(p, b, bi);
  return tensor_offset(p, config::kLse, bi, h);
}

template <bool Lens, class L, bool BottomRight>
__device__ __forceinline__ Pair locate(const Params& p, int b, int h) {
  long long bi[config::kBatchDims];
  batch_index(p, b, bi);
  Pair r;
#pragma unroll
  for (int t = 0; t < config::kTensors; ++t)
    r.off[t] = tensor_offset(p, t, bi, t == config::kK || t == config::kV ? h / p.group : h);
  r.skv = p.skv;
  if constexpr (Lens) {
    const long long n = reinterpret_cast<const L*>(p.ptr[5])[b * p.lens_stride];
    r.skv = n < 0 ? 0 : n > p.skv ? p.skv : int(n);
  }
  r.diag = BottomRight ? r.skv - p.sq : 0;
  r.b = b, r.h = h;
  return r;
}

/// The (batch, head) pair and query block (m_block) of a prefill block `bid`: the pairs in
/// sections of p.section, each section's blocks by query block from the last (the longest
/// causal runs first), pairs innermost. Blocks that run at once then share a few pairs' keys and
/// values in L2; pairs innermost over the whole grid would have every block running at once
/// read another head, each head's keys and values fetched from memory by each query block.
__device__ __forceinline__ void block_work(const Params& p, int bid, int& pair, int& m_block) {
  const int pairs = p.batches * p.heads, per = p.section * p.m_blocks;
  const int first = bid / per * p.section, size = min(p.section, pairs - first);
  const int r = bid - first * p.m_blocks;
  m_block = p.m_blocks - 1 - r / size;
  pair = first + r % size;
}

/// The last key (exclusive) any of rows [m0, m0 + rows) sees.
template <bool Causal>
__device__ __forceinline__ int key_end(const Pair& r, int m0, int rows) {
  if (!Causal) return r.skv;
  const long long e = (long long)m0 + rows + r.diag;
  return e < 0 ? 0 : e < r.skv ? int(e) : r.skv;
}

/// Score `x` (log2 units, scaled) of key j for query row i (`row_ok`: a row of the call), whose
/// mask row starts at element `mask_row`: the mask added, or -inf where the key is masked (past
/// the batch's keys, past the causal diagonal, false in a bool mask).
template <bool Causal, int Mask, class M>
__device__ __forceinline__ float masked_at(float x, const Params& p, const Pair& r, bool row_ok,
                                           int i, long long mask_row, int j) {
  if (!row_ok || j >= r.skv || (Causal && j > i + r.diag)) return minus_infinity();
  if constexpr (Mask != kNoMask) {
    const M m =
        reinterpret_cast<const M*>(p.ptr[4])[mask_row + j * p.s[config::kMask].col];
    if constexpr (Mask == kAdditive) {
      x += to_float(m) * kLog2e;
    } else {
      if (to_float(m) == 0.0f) return minus_infinity();
    }
  }
  return x;
}

/// masked_at for row i of the pair `r`.
template <bool Causal, int Mask, class M>
__device__ __forceinline__ float masked(float x, const Params& p, const Pair& r, int i, int j) {
  return masked_at<Causal, Mask, M>(x, p, r, i < p.sq, i,
                                    r.off[config::kMask] + i * p.s[config::kMask].row, j);
}

/// 1 / the sum of a row whose quad of lanes each hold part `l` of it; 0 for a row that saw no
/// key (its output is then zeros).
__device__ __forceinline__ float inverse_row_sum(float l) {
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  return l > 0.0f ? 1.0f / l : 0.0f;
}

/// The natural log-sum-exp of a row's scores from its max `m` (log2 units, scaled) and its sum
/// of exp2(x - m): -inf for a row that saw no key (the log of an empty sum). The hardware's
/// log2 (2^-22 relative) is well within the f32 scores' own error.
__device__ __forceinline__ float row_lse(float m, float sum) {
  return sum > 0.0f ? (m + __log2f(sum)) * 0.6931471805599453f : minus_infinity();
}

/// Stores the lse of query row `i` of the pair whose lse starts at `off` (Pair::off; rows past
/// the call are not written). Callers check that the call asks for it (Params::ptr).
__device__ __forceinline__ void store_lse(const Params& p, long long off, int i, float m,
                                          float sum) {
  if (i >= p.sq) return;
  reinterpret_cast<float*>(p.ptr[config::kLsePointer])[off + i * p.s[config::kLse].row] =
      row_lse(m, sum);
}

/// store_lse for a thread's rows i0 and i0 + 8 of a tile whose quad of lanes (lane & 3, `t`)
/// each hold part `l` of a row's sum; `m` the rows' max in log2 units. Every lane of the warp
/// calls it (the sums are reduced across the quad), lane t == 0 stores.
__device__ __forceinline__ void store_lse_rows(const Params& p, long long off, int i0,
                                               const float (&m)[2], const float (&l)[2], int t) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (t == 0) store_lse(p, off, i0 + 8 * h, m[h], sum);
  }
}

/// 2^x by the multifunction unit alone: exp2f's subnormal handling costs a compare and two
/// predicated scalings around it. Subnormal results flush to zero: a probability below 2^-126 of
/// the row's largest adds nothing to a sum of 1 or more (an f16 P flushes it too).
__device__ __forceinline__ float exp2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

/// exp2 of `x - m` for a running max `m` that may still be -inf (a row with nothing seen yet),
/// by exp2_ftz or (Ftz false) exp2f.
template <bool Ftz>
__device__ __forceinline__ float exp2_from(float x, float m) {
  const float d = x - (m == minus_infinity() ? 0.0f : m);
  if constexpr (Ftz) return exp2_ftz(d);
  return exp2f(d);
}

}  // namespace kiln::attention
