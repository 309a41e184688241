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
// elements it holds, and a block's sums per channel need one shared atomic per thread and
// channel.

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
template <int Parts>
__device__ __forceinline__ void arrive_and_wait(unsigned long long* counter) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned long long ticket = atomicAdd(counter, 1ull);
    const unsigned long long until = (ticket / Parts + 1) * Parts;
    while (load_acquire(counter) < until) __nanosleep(32);
    __threadfence();
  }
  __syncthreads();
}

/// (n, mean, m2) with a part of `nb` values merged in (Chan et al.).
__device__ __forceinline__ void merge(float& n, float& mean, float& m2, float nb, Part b) {
  if (nb == 0.0f) return;
  const float total = n + nb, d = b.mean - mean;
  mean += d * (nb / total);
  m2 += b.m2 + d * d * (n * (nb / total));
  n = total;
}

/// What pass 2 applies to a value of channel lane i: (x - mean) * rstd of its group.
template <int V>
struct Normalize {
  float mean[V], rstd[V];
  __device__ __forceinline__ float operator()(int i, float x, float, float) const {
    return (x - mean[i]) * rstd[i];
  }
};

/// Shared memory: per channel the block's sums, then its squared deviations; per group the
/// means (the block's, then the image's) and rstd; the merge's slices.
template <int C, int G, int S>
struct Shared {
  float sums[2][C];
  float mean[G], rstd[G];
  float n[S * G], slice_mean[S * G], slice_m2[S * G];
};

}  // namespace group_row

/// Parts blocks per image of groups_per_row groups of V elements (its pixels by C channels, in
/// C / V groups a pixel); G = C / CPG groups of CPG channels. The launch is cooperative.
template <class Body, class Epi, class L, int V, class Index, int Block, int Items, int C,
          int CPG, int Parts>
__global__ void __launch_bounds__(Block, 1)
    group_rows(const Args<Epi::Outputs::size + Body::Inputs::size + Epi::Inputs::size + 1,
                          Body::scalars + 1 + Epi::scalars>
                   args,
               Index groups_per_row) {
  using namespace group_row;
  constexpr int NO = Epi::Outputs::size, NI = Body::Inputs::size;
  constexpr int K = NO + NI + Epi::Inputs::size;
  constexpr int G = C / CPG, kPixelGroups = C / V, S = G >= Block ? 1 : Block / G;
  static_assert(kExtraSlots<L> == 0, "no gathers");
  static_assert(C % CPG == 0 && C % V == 0 && (Block * V) % C == 0 && Block % 32 == 0,
                "a thread's channels are the same in every group it holds");
  static_assert(Items >= 1 && Items <= 16, "1 to 16 groups a thread, in registers");
  __shared__ Shared<C, G, S> sh;
  const unsigned t = threadIdx.x;
  const Index row = Index(blockIdx.x / Parts), part = Index(blockIdx.x % Parts);
  const Index pixels = groups_per_row / kPixelGroups;
  constexpr Index kSpan = Index(Block) * Items / kPixelGroups;  // pixels a part
  const auto pixels_of = [&](Index p) {
    const Index lo = p * kSpan;
    return lo >= pixels ? Index(0) : pixels - lo < kSpan ? pixels - lo : kSpan;
  };
  const Index px = pixels_of(part);
  const row::RowCursor<L, Index, K> at(row, groups_per_row, part * kSpan * kPixelGroups,
                                       row::NoGeometry{});
  const float eps = args.s[Body::scalars];
  const float* epi_scalars = args.s + Body::scalars + 1;
  auto* counters = static_cast<unsigned long long*>(args.p[K]);
  Part* parts = reinterpret_cast<Part*>(counters + gridDim.x / Parts) + row * Parts * G;
  for (unsigned i = t; i < 2u * C; i += Block) sh.sums[i / C][i % C] = 0.0f;

  float x[Items][V];
  const int held = row::groups_held<Items>(px * kPixelGroups, Block, t);
  row::load_held<Body, L, V, NO, Index, Items>(args, at, held, Block, t, x);
  const int c0 = int((t * V) % C);
  float acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    acc[i] = 0.0f;
#pragma unroll
    for (int it = 0; it < Items; ++it)
      if (it < held) acc[i] += x[it][i];
  }
  __syncthreads();  // sums zeroed
  if (held > 0)
#pragma unroll
    for (int i = 0; i < V; ++i) atomicAdd(&sh.sums[0][c0 + i], acc[i]);
  __syncthreads();
  const float n_part = float(px) * float(CPG);
  for (int g = int(t); g < G; g += Block) {
    float s = 0.0f;
    for (int c = g * CPG; c < (g + 1) * CPG; ++c) s += sh.sums[0][c];
    sh.mean[g] = n_part > 0.0f ? s / n_part : 0.0f;
  }
  __syncthreads();
  // Pass 2 of the block: squared deviations from its own means (two passes over registers).
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const float m = sh.mean[(c0 + i) / CPG];
    acc[i] = 0.0f;
#pragma unroll
    for (int it = 0; it < Items; ++it)
      if (it < held) acc[i] += (x[it][i] - m) * (x[it][i] - m);
  }
  if (held > 0)
#pragma unroll
    for (int i = 0; i < V; ++i) atomicAdd(&sh.sums[1][c0 + i], acc[i]);
  __syncthreads();
  for (int g = int(t); g < G; g += Block) {
    float m2 = 0.0f;
    for (int c = g * CPG; c < (g + 1) * CPG; ++c) m2 += sh.sums[1][c];
    parts[part * G + g] = Part{sh.mean[g], m2};
  }
  arrive_and_wait<Parts>(counters + row);

  // The image's statistics: S slices of the parts per group, then the slices.
  for (int w = int(t); w < S * G; w += Block) {
    const int g = w % G;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int p = w / G; p < Parts; p += S) {
      const float2 b = __ldcg(reinterpret_cast<const float2*>(parts + p * G + g));
      merge(n, mean, m2, float(pixels_of(Index(p))) * float(CPG), Part{b.x, b.y});
    }
    sh.n[w] = n, sh.slice_mean[w] = mean, sh.slice_m2[w] = m2;
  }
  __syncthreads();
  for (int g = int(t); g < G; g += Block) {
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int s = 0; s < S; ++s)
      merge(n, mean, m2, sh.n[s * G + g], Part{sh.slice_mean[s * G + g], sh.slice_m2[s * G + g]});
    sh.mean[g] = mean;
    sh.rstd[g] = rsqrtf(m2 / n + eps);
  }
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
