#pragma once
// group_norm over a channels_last x in one cooperative launch. Each image is a row of the
// layout (its pixels by C channels, C innermost) split between Parts blocks, each of which holds
// its whole pixels in registers. A block folds its share into per-group means and sums of
// squared deviations from them, writes those to the workspace and waits there for the other
// blocks of its image; each block then merges the image's parts (Chan's formula) and normalizes
// its values from registers. x is read once and y written once. (The row template runs a group
// as a row of [C / G, *spatial] instead, whose runs of C / G channels, 20 bytes for 10 f16
// channels, leave most of each sector it reads unused.)
//
// Slots: Epi's outputs, Body's inputs, Epi's inputs (weight and bias first: the host makes them
// the epilogue's), then the workspace. Scalars: Body's, eps, then Epi's. Block * V is a multiple
// of C and a part is whole pixels, so each thread's V channels are the same in every group of V
// elements it holds: a thread sums its values per channel in registers, and a block's groups
// sum those from shared memory, a segment of a warp's lanes each (no atomics).

#include <kiln/rows.cuh>

namespace kiln {
namespace group_row {

/// A part's statistics of one group, in the workspace after the images' counters.
struct Part {
  float mean, m2;  ///< the mean of the part's values, and the sum of squared deviations from it
};

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/// Every thread of the block, after its writes to the workspace: returns once the Parts blocks
/// of the image have arrived at its counter. The counter only grows (a launch waits for its next
/// multiple of Parts), so the workspace needs no reset between launches.
/// The block's writes before it (ordered by the barrier, then released at GPU scope by thread
/// 0's add) are seen by every block after its wait (acquire loads), as CUTLASS's grid barrier
/// orders them: no fence.sc, which costs microseconds where many writes are in flight.
template <int Parts>
__device__ __forceinline__ void arrive_and_wait(unsigned long long* counter) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long ticket;
    asm volatile("atom.add.release.gpu.global.u64 %0, [%1], 1;"
                 : "=l"(ticket)
                 : "l"(counter)
                 : "memory");
    const unsigned long long until = (ticket / Parts + 1) * Parts;
    while (load_acquire(counter) < until) __nanosleep(32);
  }
  __syncthreads();
}

/// (n, mean, m2) with a part of `nb` values merged in (Chan et al.).
__device__ __forceinline__ void merge(float& n, float& mean, float& m2, float nb, float meanb,
                                      float m2b) {
  if (nb == 0.0f) return;
  const float total = n + nb, d = meanb - mean, w = __fdividef(nb, total);
  mean += d * w;
  m2 += m2b + d * d * (n * w);
  n = total;
}

/// The lanes that work on one item of a reduction over `E` terms: a power of two, at most 32,
/// so that a warp takes 32 / lanes items at once where terms are few.
__host__ __device__ constexpr int lanes_for(int e) {
  int p = 1;
  while (p < e && p < 32) p *= 2;
  return p;
}

/// Per group g of G, the sum over its block of `part` (thread t's V values at t * V): the R
/// = Block * V / C values of each of its CPG channels c lie at c + k * C, k < R. A segment of
/// lanes_for(CPG * R) lanes of a warp a group, reduced by shuffles; into `out[g]`.
template <int C, int CPG, int R, int Block>
__device__ __forceinline__ void group_sums(const float* part, float* out) {
  constexpr int G = C / CPG, E = CPG * R, P = lanes_for(E), kPerWarp = 32 / P;
  const unsigned lane = threadIdx.x % 32u, sl = lane % P;
  for (int g0 = int(threadIdx.x / 32u) * kPerWarp; g0 < G; g0 += (Block / 32) * kPerWarp) {
    const int g = g0 + int(lane / P);
    float s = 0.0f;
    if (g < G)
      for (int e = int(sl); e < E; e += P) s += part[g * CPG + e % CPG + (e / CPG) * C];
#pragma unroll
    for (int o = P / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (sl == 0 && g < G) out[g] = s;
  }
}

/// Each group's mean and rstd over its image from the Parts parts' (mean, m2) at `parts`
/// (part p's group g at p * G + g), `pixels_of(p)` * CPG values each: a segment of lanes a
/// group, each lane merging its parts, then the segment by shuffles.
template <int G, int CPG, int Parts, int Block, class Pixels>
__device__ __forceinline__ void image_stats(const Part* parts, const Pixels& pixels_of, float eps,
                                            float* mean_of, float* rstd_of) {
  constexpr int P = lanes_for(Parts), kPerWarp = 32 / P;
  const unsigned lane = threadIdx.x % 32u, sl = lane % P;
  for (int g0 = int(threadIdx.x / 32u) * kPerWarp; g0 < G; g0 += (Block / 32) * kPerWarp) {
    const int g = g0 + int(lane / P);
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    constexpr int kEach = (Parts + P - 1) / P;  // every load issued before the first merge
    float2 b[kEach];
#pragma unroll
    for (int k = 0; k < kEach; ++k) {
      const int p = int(sl) + k * P;
      b[k] = g < G && p < Parts ? __ldcg(reinterpret_cast<const float2*>(parts + p * G + g))
                                : make_float2(0.0f, 0.0f);
    }
#pragma unroll
    for (int k = 0; k < kEach; ++k) {
      const int p = int(sl) + k * P;
      if (g < G && p < Parts) merge(n, mean, m2, float(pixels_of(p)) * float(CPG), b[k].x, b[k].y);
    }
#pragma unroll
    for (int o = P / 2; o > 0; o /= 2) {
      const float nb = __shfl_xor_sync(0xffffffffu, n, o);
      const float meanb = __shfl_xor_sync(0xffffffffu, mean, o);
      const float m2b = __shfl_xor_sync(0xffffffffu, m2, o);
      merge(n, mean, m2, nb, meanb, m2b);
    }
    if (sl == 0 && g < G) {
      mean_of[g] = mean;
      rstd_of[g] = rsqrtf(m2 / n + eps);
    }
  }
}

/// What pass 2 applies to a value of channel lane i: (x - mean) * rstd of its group.
template <int V>
struct Normalize {
  float mean[V], rstd[V];
  __device__ __forceinline__ float operator()(int i, float x, float, float) const {
    return (x - mean[i]) * rstd[i];
  }
};

/// `v` into `to` (16-byte aligned where V is a multiple of 4: one wavefront per 8 lanes).
template <int V>
__device__ __forceinline__ void put(float* to, const float (&v)[V]) {
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int q = 0; q < V / 4; ++q)
      reinterpret_cast<float4*>(to)[q] =
          make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) to[i] = v[i];
  }
}

/// Shared memory: each thread's V sums (then squared deviations); per group the means (the
/// block's, then the image's), the block's sums of squared deviations, and rstd.
template <int Block, int V, int G>
struct Shared {
  alignas(16) float part[Block * V];
  float mean[G], m2[G], rstd[G];
};

}  // namespace group_row

/// Parts blocks per image of groups_per_row groups of V elements (its pixels by C channels, in
/// C / V groups a pixel); G = C / CPG groups of CPG channels; PerSM blocks a multiprocessor
/// (the launch bounds). The launch is cooperative.
template <class Body, class Epi, class L, int V, class Index, int Block, int PerSM, int Items,
          int C, int CPG, int Parts>
__global__ void __launch_bounds__(Block, PerSM)
    group_rows(const Args<Epi::Outputs::size + Body::Inputs::size + Epi::Inputs::size + 1,
                          Body::scalars + 1 + Epi::scalars>
                   args,
               Index groups_per_row) {
  using namespace group_row;
  constexpr int NO = Epi::Outputs::size, NI = Body::Inputs::size;
  constexpr int K = NO + NI + Epi::Inputs::size;
  constexpr int G = C / CPG, kPixelGroups = C / V, R = Block * V / C;
  static_assert(kExtraSlots<L> == 0, "no gathers");
  static_assert(C % CPG == 0 && C % V == 0 && (Block * V) % C == 0 && Block % 32 == 0,
                "a thread's channels are the same in every group it holds");
  static_assert(Items >= 1 && Items <= 16, "1 to 16 groups a thread, in registers");
  __shared__ Shared<Block, V, G> sh;
  const unsigned t = threadIdx.x;
  const Index row = Index(blockIdx.x / Parts), part = Index(blockIdx.x % Parts);
  const Index pixels = groups_per_row / kPixelGroups;
  constexpr Index kSpan = Index(Block) * Items / kPixelGroups;  // pixels a part
  const auto pixels_of = [&](int p) {
    const Index lo = Index(p) * kSpan;
    return lo >= pixels ? Index(0) : pixels - lo < kSpan ? pixels - lo : kSpan;
  };
  const Index px = pixels_of(int(part));
  const row::RowCursor<L, Index, K> at(row, groups_per_row, part * kSpan * kPixelGroups,
                                       row::NoGeometry{});
  const float eps = args.s[Body::scalars];
  const float* epi_scalars = args.s + Body::scalars + 1;
  auto* counters = static_cast<unsigned long long*>(args.p[K]);
  Part* parts = reinterpret_cast<Part*>(counters + gridDim.x / Parts) + row * Parts * G;

  float x[Items][V];
  const int held = row::groups_held<Items>(px * kPixelGroups, Block, t);
  row::load_held<Body, L, V, NO, Index, Items>(args, at, held, Block, t, x);
  const int c0 = int((t * V) % C);
  float s[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    s[i] = 0.0f;
#pragma unroll
    for (int it = 0; it < Items; ++it)
      if (it < held) s[i] += x[it][i];
  }
  put(sh.part + t * V, s);
  __syncthreads();
  group_sums<C, CPG, R, Block>(sh.part, sh.mean);
  __syncthreads();
  const float n_part = float(px) * float(CPG), inv_part = n_part > 0.0f ? 1.0f / n_part : 0.0f;
  // Pass 2 of the block: squared deviations from its own means (two passes over registers).
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const float m = sh.mean[(c0 + i) / CPG] * inv_part;
    s[i] = 0.0f;
#pragma unroll
    for (int it = 0; it < Items; ++it)
      if (it < held) s[i] += (x[it][i] - m) * (x[it][i] - m);
  }
  put(sh.part + t * V, s);
  __syncthreads();
  group_sums<C, CPG, R, Block>(sh.part, sh.m2);
  __syncthreads();
  for (int g = int(t); g < G; g += Block)
    parts[part * G + g] = Part{sh.mean[g] * inv_part, sh.m2[g]};
  arrive_and_wait<Parts>(counters + row);
  image_stats<G, CPG, Parts, Block>(parts, pixels_of, eps, sh.mean, sh.rstd);
  __syncthreads();
  group_row::Normalize<V> norm;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    norm.mean[i] = sh.mean[(c0 + i) / CPG];
    norm.rstd[i] = sh.rstd[(c0 + i) / CPG];
  }
#pragma unroll
  for (int it = 0; it < Items; ++it)
    if (it < held) {
      Index off[K];
      at.offsets(Index(it) * Index(Block) + Index(t), off);
      row::write_group<Epi, Types<>, L, V, NO, NI>(args.p, off, x[it], norm, epi_scalars);
    }
}

}  // namespace kiln
