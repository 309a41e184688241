#pragma once
// The GEMM kernel of gemm.cuh (included from there): the block's tile, the cp.async ring along
// K, and the epilogue from the accumulators.

namespace kiln::gemm {

/// Which tile of C block `pid` computes: groups of 8 rows of tiles walk along N together, so
/// that blocks running at once share A's rows and B's columns in L2.
__device__ __forceinline__ void tile_of(int pid, int tiles_m, int tiles_n, int& tm, int& tn) {
  constexpr int kGroup = 8;
  const int per_group = kGroup * tiles_n;
  const int first = pid / per_group * kGroup;
  const int rows = tiles_m - first < kGroup ? tiles_m - first : kGroup;
  tm = first + pid % per_group % rows;
  tn = pid % per_group / rows;
}

/// This block's rank in its cluster of Split (0 without one: Split 1 runs on any arch).
template <int Split>
__device__ __forceinline__ unsigned split_rank() {
  if constexpr (Split > 1)
    return cluster_rank();
  else
    return 0u;
}

/// v = the V floats at `at` of the accumulator tiles of the cluster's Split blocks, summed in
/// rank order (the same bits whatever the timing; Split 1: this block's tile); this block's
/// (`rank`) from its own shared memory, the others' through distributed shared memory, 16 bytes
/// a load where V is a multiple of 4 (`at` must then be 16-byte aligned).
template <int Split, int V>
__device__ __forceinline__ void split_sum(const float* tile, int at, unsigned rank,
                                          float (&v)[V]) {
  // Part s of the floats at `p`, 4 (16-byte aligned) or 1.
  const auto part4 = [&](const float* p, int s) {
    if constexpr (Split > 1)
      if (unsigned(s) != rank) return cluster_load4(cluster_map(p, unsigned(s)));
    return *reinterpret_cast<const float4*>(p);
  };
  const auto part1 = [&](const float* p, int s) {
    if constexpr (Split > 1)
      if (unsigned(s) != rank) return cluster_load(cluster_map(p, unsigned(s)));
    return *p;
  };
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int q = 0; q < V; q += 4) {
      float4 f = part4(tile + at + q, 0);
#pragma unroll
      for (int s = 1; s < Split; ++s) {
        const float4 g = part4(tile + at + q, s);
        f.x += g.x, f.y += g.y, f.z += g.z, f.w += g.w;
      }
      v[q] = f.x, v[q + 1] = f.y, v[q + 2] = f.z, v[q + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      v[i] = part1(tile + at + i, 0);
#pragma unroll
      for (int s = 1; s < Split; ++s) v[i] += part1(tile + at + i, s);
    }
  }
}

/// The range of K tiles [kt0, kt0 + ktiles) block z of a cluster of Split takes (Split 1: all).
template <int Split, int BK>
__device__ __forceinline__ void split_range(int K, int& kt0, int& ktiles) {
  const int per = ((K + BK - 1) / BK + Split - 1) / Split;
  kt0 = Split > 1 ? int(blockIdx.z) * per : 0;
  ktiles = max(0, min((K + BK - 1) / BK - kt0, per));
}

/// The block's accumulators over `ktiles` tiles of K: a ring of Stages shared-memory stages in
/// `smem` that cp.async fills ahead of the warps' tensor-core products; load(stage, kt) issues
/// the copies of the block's kt-th tile of K (A's tile, then B's) into `stage`.
template <class T, class OpA, class OpB, int ALayout, int BLayout, int BK, int MI, int NI,
          bool Exact, int Stages, class Load>
__device__ __forceinline__ void accumulate_over_k(float (&acc)[MI][NI][4], char* smem, Load load,
                                                  int ktiles, int wm0, int wn0, int lane) {
  constexpr int kStage = OpA::bytes + OpB::bytes;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[mi][ni][q] = 0.0f;

#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < ktiles) load(smem + s % Stages * kStage, s);
    mma::cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    mma::cp_async_wait<Stages - 2>();
    __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free again
    if (kt + Stages - 1 < ktiles) load(smem + (kt + Stages - 1) % Stages * kStage, kt + Stages - 1);
    mma::cp_async_commit();
    const char* st = smem + kt % Stages * kStage;
    stage_products<T, OpA, OpB, ALayout, BLayout, BK, MI, NI, Exact>(acc, st, st + OpA::bytes, wm0,
                                                                     wn0, lane);
  }
}

/// The warp's accumulators into `tile` (rows of Ld floats) at the warp's place in the block's
/// tile, so that the epilogue walks rows.
template <int MI, int NI, int Ld>
__device__ __forceinline__ void store_accumulators(float* tile, const float (&acc)[MI][NI][4],
                                                   int wm0, int wn0, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(tile + (wm0 + mi * 16 + g + h * 8) * Ld + wn0 + ni * 8 + 2 * t) =
            make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
}

/// The block's BM x BN tile from the warps' accumulators (summed over the Split blocks of a
/// cluster) to the epilogue: emit(r, c, v) with v the V columns from c of the tile's row r, for
/// each of them in the first `rows` x `cols`, a thread per V columns of a row at a time (loads
/// and stores along rows coalesce). The accumulators pass through the ring's shared memory.
template <int BM, int BN, int MI, int NI, int Split, int V, int Threads, class Emit>
__device__ __forceinline__ void epilogue_tile(char* smem, const float (&acc)[MI][NI][4], int rows,
                                              int cols, int wm0, int wn0, int tid, int lane,
                                              Emit emit) {
  constexpr int kLd = config::mma_tile_ld(BN);  // the accumulator tile's row, in floats
  static_assert(Split >= 1 && BM % Split == 0, "a split of the tile's rows");
  // With Split > 1 each block of the cluster sums one share of the tile's rows from all their
  // accumulator tiles (distributed shared memory), in rank order: the same bits whatever the
  // timing.
  const int r0 = Split > 1 ? int(blockIdx.z) * (BM / Split) : 0;
  mma::cp_async_wait<0>();
  __syncthreads();  // the ring is free: the accumulators pass through it
  float* tile = reinterpret_cast<float*>(smem);
  store_accumulators<MI, NI, kLd>(tile, acc, wm0, wn0, lane);
  split_barrier<Split, true>();
  constexpr int kVecs = BN / V;
  const unsigned rank = split_rank<Split>();
#pragma unroll 1
  for (int e = tid; e < BM / Split * kVecs; e += Threads) {
    const int r = r0 + e / kVecs, c = e % kVecs * V;
    if (r >= rows || c >= cols) continue;
    float v[V];
    split_sum<Split>(tile, r * kLd + c, rank, v);
    emit(r, c, v);
  }
  split_barrier<Split, false>();  // the tile is read before the next batch overwrites it
}

template <class T, class Epi, bool Bias, int BM, int BN, int BK, int WM, int WN, int Stages,
          int ALayout, int BLayout, bool Exact, int Split, int V>
__global__ void __launch_bounds__(WM* WN * 32)
    gemm(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args) {
  constexpr int NO = Epi::Outputs::size;
  constexpr int kThreads = WM * WN * 32;
  constexpr int WTM = BM / WM, WTN = BN / WN;
  constexpr int MI = WTM / 16, NI = WTN / 8;
  static_assert(WTM % 16 == 0 && WTN % 16 == 0, "warp tiles are multiples of 16");
  static_assert(BK % 16 == 0 && Stages >= 2, "BK a multiple of 16, two stages or more");
  using OpA = OperandTile<T, BM, BK, ALayout>;
  using OpB = OperandTile<T, BN, BK, BLayout>;
  // The dynamic shared memory the host gives (gemm_config.cuh): the ring, then the accumulator
  // tile in its place.
  static_assert(OpA::bytes + OpB::bytes == config::mma_stage_bytes(BM, BN),
                "a stage of the ring is what gemm_config.cuh sizes");
  static_assert(BK == config::stage_k(int(sizeof(T))), "BK is a 128-byte row of K");
  constexpr int kA = NO, kB = NO + 1;
  extern __shared__ __align__(128) char smem[];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm0 = warp / WN * WTM, wn0 = warp % WN * WTN;
  const int M = args.m, N = args.n, K = args.k;
  int tm, tn;
  tile_of(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  // With Split > 1, the blocks of a cluster along z each take a range of K.
  int kt0, ktiles;
  split_range<Split, BK>(K, kt0, ktiles);
  wait_for_previous_grid();
  allow_next_grid();

  for (long long b = blockIdx.y; b < args.batches; b += gridDim.y) {
    long long bi[kBatchDims];
    batch_index(args, b, bi);
    const T* A = static_cast<const T*>(args.p[kA]) + batch_offset(args, kA, bi);
    const T* B = static_cast<const T*>(args.p[kB]) + batch_offset(args, kB, bi);
    auto load = [&](char* st, int kt) {
      const int k0 = (kt0 + kt) * BK;
      OpA::template load<kThreads>(st, A, args.row[kA], args.col[kA], m0, k0, M, K, tid);
      OpB::template load<kThreads>(st + OpA::bytes, B, args.col[kB], args.row[kB], n0, k0, N, K,
                                   tid);
    };
    float acc[MI][NI][4];
    accumulate_over_k<T, OpA, OpB, ALayout, BLayout, BK, MI, NI, Exact, Stages>(
        acc, smem, load, ktiles, wm0, wn0, lane);
    const int rows = M - m0 < BM ? M - m0 : BM, cols = N - n0 < BN ? N - n0 : BN;
    epilogue_tile<BM, BN, MI, NI, Split, V, kThreads>(
        smem, acc, rows, cols, wm0, wn0, tid, lane, [&](int r, int c, const float(&v)[V]) {
          epilogue_at<T, Epi, Bias, V>(args, bi, m0 + r, n0 + c, v);
        });
  }
}

}  // namespace kiln::gemm
