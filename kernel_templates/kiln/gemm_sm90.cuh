#pragma once
// The GEMM template for sm_90a: one warp of a producer warpgroup loads tiles of A and B with TMA
// into a ring of Stages shared-memory stages (128-byte swizzled, as wgmma reads them); two
// consumer warpgroups each multiply 64 rows of the block's 128 x BN tile (BN 64 to 256: config::
// wgmma_width_ok)
// with wgmma, keeping one stage's products in flight and releasing the stage before it (full and
// empty mbarriers per stage). For an exact f32 product, the producer group's other three warps
// write each landed stage's B rest (a split mbarrier per stage).
//
// Split 1: persistent blocks, at most one per SM (the launch clamps the grid: LaunchConfig::
// persistent), each walking the tiles blockIdx.x, + gridDim.x, ... The ring's uses are numbered
// on across tiles, so the producer loads the next tile's first stages while the consumers run
// the epilogue of this one, each group through its own staging area past the ring. Split > 1: a
// block per tile and K range; the blocks of a cluster along z sum their tiles through distributed
// shared memory in rank order after the accumulators pass through the ring, as gemm_kernel.cuh's
// do; the epilogue then walks rows, V columns a thread. Once its barriers are set up, a block
// waits for the kernel before it (a programmatic launch: kiln/grid_dependency.cuh).
//
// A is K-contiguous ([M, K] rows); B is K-contiguous (BTrans 0: [N, K], linear's weight) or
// N-contiguous (BTrans 1: [K, N]); f16 and bf16, or f32 on TF32 with both K-contiguous. Exact
// (f32 to about 1e-6): three TF32 products per term, the consumers' main loop of
// gemm_sm90_exact.cuh. Edges of M, N and K arrive as zeros from TMA.
// Parameters: the Args of gemm.cuh (pointers, scalars, strides: the epilogue's), then the
// tensor maps of A (box 128 bytes of K x 128 rows) and B (128 bytes of K x BN rows, or of N x 64
// rows of K per 64 columns), and (Store: split 1, one output whose rows are a matrix TMA maps,
// no bias, epilogue inputs only staged per column) the map of the output (box a chunk of
// stored_epilogue's columns x 64 rows, no swizzle), which the epilogue stores through instead of
// its pointer; a convolution's last chunks of a tile stored during the next tile's products
// (gemm_sm90_held.cuh).
// Columns (split 1, a bias or epilogue inputs all per column): each consumer thread loads one
// column of them before the tile's products and, after, stages it in shared memory, where the
// epilogue's walk reads them: the epilogue's per-column math (ColumnMath: a batch norm's scale
// and shift) is done there, once a column.

#include <kiln/gemm.cuh>
#include <kiln/gemm_config.cuh>
#include <kiln/gemm_sm90_epilogue.cuh>
#include <kiln/gemm_sm90_exact.cuh>
#include <kiln/gemm_sm90_held.cuh>
#include <kiln/tma.cuh>
#include <kiln/wgmma.cuh>

namespace kiln::gemm {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// The ring of gemm_sm90: a stage holds 128 bytes of K per row of A (128 rows) and of B (BN
/// rows), and for Exact B's rest after B; then the full and empty barriers of each stage, and
/// for Exact its split barriers (B's rest written).
template <class T, int BN, int Stages, bool Exact>
struct Ring {
  // The layout the host sizes (gemm_config.cuh).
  static constexpr int kRows = config::kWgmmaRows;
  static constexpr int kDepth = config::stage_k(int(sizeof(T)));  // K per stage
  static constexpr int kTileA = config::wgmma_tile_bytes(kRows);
  static constexpr int kTileB = config::wgmma_tile_bytes(BN);
  static constexpr int kLoad = kTileA + kTileB;  // what TMA writes a stage
  static constexpr int kStage = config::wgmma_stage_bytes(BN, Exact);
  static constexpr int kBarriers = config::wgmma_barriers(Exact);  // per stage
  unsigned char* smem;
  unsigned long long* full;
  unsigned long long* empty;
  unsigned long long* split;

  __device__ __forceinline__ unsigned char* stage(int it) const {
    return smem + it % Stages * kStage;
  }
};

/// What every tile of a block shares: the tile grid, and the K range of this block's split.
struct Work {
  int tiles_m, tiles_n, kt0, ktiles, padded;
};

/// The producer (one thread): the stages of each of this block's tiles, the ring's uses numbered
/// on from one tile to the next, each stage loaded once both consumer groups released it.
template <class R, int BN, int Stages, int BTrans>
__device__ __forceinline__ void produce(const R& ring, const TensorMap* map_a,
                                        const TensorMap* map_b, const Work& w, int K) {
  int it = 0;
  for (int tile = blockIdx.x; tile < w.tiles_m * w.tiles_n; tile += gridDim.x) {
    int tm, tn;
    tile_of(tile, w.tiles_m, w.tiles_n, tm, tn);
    for (int kt = 0; kt < w.padded; ++kt, ++it) {
      const int s = it % Stages;
      if (it >= Stages) tma::barrier_wait(&ring.empty[s], (it / Stages - 1) & 1);
      tma::arrive_expect_bytes(&ring.full[s], R::kLoad);
      unsigned char* st = ring.stage(it);
      // A padded stage past K (Exact: an even count) loads beyond the tensor: all zeros.
      const int k0 =
          kt < w.ktiles ? (w.kt0 + kt) * R::kDepth : (K + R::kDepth - 1) / R::kDepth * R::kDepth;
      tma::load_2d(st, map_a, k0, tm * R::kRows, &ring.full[s]);
      if constexpr (BTrans == 0) {
        tma::load_2d(st + R::kTileA, map_b, k0, tn * BN, &ring.full[s]);
      } else {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j)
          tma::load_2d(st + R::kTileA + j * 64 * R::kDepth * 2, map_b, tn * BN + 64 * j, k0,
                       &ring.full[s]);
      }
    }
  }
}

/// The ring's barriers (one thread): a stage is full once the producer's copies landed, empty once
/// both consumer groups released it; Exact: its B rest written by the three other producer warps.
template <int Stages, bool Exact, class R>
__device__ __forceinline__ void init_ring(const R& ring) {
  for (int s = 0; s < Stages; ++s) {
    tma::barrier_init(&ring.full[s], 1);
    tma::barrier_init(&ring.empty[s], 2);
    if constexpr (Exact) tma::barrier_init(&ring.split[s], 96);
  }
}

/// Consumer group `c`'s products (its 64 rows of the tile) over `ktiles` stages, the ring's
/// uses it0..: one stage's products in flight, the stage before released, the last released
/// at the end. In the first Drains steps `drain()` runs after the step's products are issued,
/// before their wait, while the tensor cores work (the last tile's held epilogue chunks:
/// gemm_sm90_held.cuh); the steps after them are a loop of their own, in which nothing held
/// stays live.
template <class T, class R, int BN, int Stages, int BTrans, int Drains, class Drain>
__device__ __forceinline__ void products(float (&acc)[BN / 2], const R& ring, int it0, int ktiles,
                                         int c, int tid, const Drain& drain) {
  // Stage 0's descriptors, made once; a stage's and a K slice's offsets are added to their
  // address field (16-byte units, no carry: shared memory is under 256 KB).
  const unsigned char* s0 = ring.stage(0);
  const unsigned long long a0 = wgmma::descriptor(s0 + c * 64 * 128, 16, 1024);
  const unsigned long long b0 = BTrans ? wgmma::descriptor(s0 + R::kTileA, 64 * R::kDepth * 2, 1024)
                                       : wgmma::descriptor(s0 + R::kTileA, 16, 1024);
  const auto issue = [&](int it) {
    tma::barrier_wait(&ring.full[it % Stages], (it / Stages) & 1);
    const unsigned long long at = unsigned(it % Stages) * unsigned(R::kStage >> 4);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {  // 32 bytes of K each: k16 of f16/bf16, k8 of TF32
      const unsigned long long da = a0 + at + kk * 2;
      const unsigned long long db = b0 + at + (BTrans ? kk * 16 * 128 / 16 : kk * 2);
      wgmma::Wgmma<T, BN>::template run<BTrans>(acc, da, db, 1);
    }
    wgmma::commit();
  };
  const auto retire = [&](int kt) {  // step kt - 1's products done: its stage released
    wgmma::wait<1>();
    if (kt > 0 && tid % 128 == 0) tma::arrive(&ring.empty[(it0 + kt - 1) % Stages]);
  };
  int kt = 0;
  if constexpr (Drains > 0) {
#pragma unroll 1
    for (; kt < ktiles && kt < Drains; ++kt) {
      issue(it0 + kt);
      drain();
      retire(kt);
    }
  }
  for (; kt < ktiles; ++kt) {
    issue(it0 + kt);
    retire(kt);
  }
  wgmma::wait<0>();
  wgmma::fence_operands(acc);  // read after the wait, not hoisted above it
  if (ktiles > 0 && tid % 128 == 0) tma::arrive(&ring.empty[(it0 + ktiles - 1) % Stages]);
}

/// The consumer groups' part of sm90_block: each of the block's tiles, its products and (Split 1)
/// its epilogue. Columns: the epilogue's per-column operands loaded a column a thread before the
/// products and staged in shared memory after them, once both groups are done with the last
/// tile's (named barrier 4).
template <class T, class Epi, bool Bias, int BN, int Stages, int BTrans, int V, bool Exact,
          int Split, bool Images, bool Store, bool Columns, class A, class R>
__device__ __forceinline__ void consume(const A& args, const R& ring, const Work& w,
                                        float (&acc)[BN / 2], unsigned char* smem, float* staging,
                                        const TensorMap* map_c, int tid) {
  constexpr int kSlots = (Bias ? 1 : 0) + Epi::Inputs::size;  // loaded per column
  constexpr int kStaged = (Bias ? 1 : 0) + ColumnMath<Epi>::kStaged;
  static_assert(!Columns || Split == 1, "staged columns are read by split 1's epilogues only");
  constexpr int kHeld = held_chunks<Split == 1 && Store, Images, T, Epi, BN, Exact>();
  float* cols = reinterpret_cast<float*>(smem + config::wgmma_columns_offset(BN, Stages, Exact));
  const int group = tid / 128;
  float* stage = staging + (group - 1) * config::kStagingRows * config::kStagingLd;
  int it = 0, chunk = 0;
  Held<Epi, BN, kHeld> held;  // Store: the last tile's chunks stored during this one's products
  const auto drain = [&] { held.drain(args, stage, cols, map_c, group - 1, tid, chunk); };
  for (int tile = blockIdx.x; tile < w.tiles_m * w.tiles_n; tile += gridDim.x) {
    int tm, tn;
    tile_of(tile, w.tiles_m, w.tiles_n, tm, tn);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
    float colv[kSlots > 0 ? kSlots : 1];
    if constexpr (Columns)
      take_columns<T, Epi, Bias, BN>(args, tn * BN, tid - 128, colv);
    else if (Split == 1 && group == 1)
      prefetch_epilogue<T, Epi, Bias, BN>(args, tn * BN, tid % 128);
    if constexpr (Exact)
      exact_products<BN, Stages, R::kStage, R::kTileA, R::kTileB>(
          acc, smem, {ring.full, ring.split, ring.empty}, it, w.padded, group - 1, tid);
    else
      products<T, R, BN, Stages, BTrans, kHeld>(acc, ring, it, w.ktiles, group - 1, tid, drain);
    held.drain_all(args, stage, cols, map_c, group - 1, tid, chunk);  // K under the held chunks
    it += w.padded;
    if constexpr (Split == 1 && Columns) {
      float staged[kStaged];  // the bias, then the epilogue's per-column operands
      if constexpr (Bias) staged[0] = colv[0];
      ColumnMath<Epi>::apply(colv + (Bias ? 1 : 0), args.s, staged + (Bias ? 1 : 0));
      asm volatile("bar.sync 4, 256;" ::: "memory");  // the last tile's walks are done
      if (tid - 128 < BN) {
#pragma unroll
        for (int j = 0; j < kStaged; ++j) cols[j * BN + tid - 128] = staged[j];
      }
      asm volatile("bar.sync 4, 256;" ::: "memory");
    }
    const bool last = tile + int(gridDim.x) >= w.tiles_m * w.tiles_n;
    if constexpr (Split == 1 && Store)
      stored_epilogue<Epi, BN>(args, acc, stage, cols, map_c, tm * R::kRows, tn * BN, group - 1,
                               tid, chunk, held, last);
    else if constexpr (Split == 1)
      staged_epilogue<T, Epi, Bias, BN, V, Images, Columns>(args, acc, stage, cols, tm * R::kRows,
                                                            tn * BN, group - 1, tid);
  }
  held.drain_all(args, stage, cols, map_c, group - 1, tid, chunk);
  if (Store && tid % 128 == 0) tma::store_wait_all();  // shared memory outlives the stores
}

/// The block of gemm_sm90 (and of conv.cuh's conv2d_sm90): its ring and barriers, the producer
/// thread's produce(ring, work) loading each of the block's stages, the consumer groups' products
/// and epilogue through `args` (gemm.cuh's Args: m, n, k, the epilogue's slots; Images: rows
/// of a convolution's images, epilogue_rows; Store: the output through `map_c`, stored_epilogue).
template <class T, class Epi, bool Bias, int BN, int Stages, int BTrans, int V, bool Exact,
          int Split, bool Images, bool Store, bool Columns, class A, class Produce>
__device__ __forceinline__ void sm90_block(const A& args, const TensorMap* map_c, Produce produce) {
  using R = Ring<T, BN, Stages, Exact>;
  static_assert(!Exact || (sizeof(T) == 4 && BTrans == 0 && (BN == 64 || BN == 128)),
                "Exact: f32, both K-major, BN 64 or 128");
  static_assert(config::wgmma_width_ok(BN, BTrans), "BN one of config::kWgmmaWidths; BTrans: 64s");
  static_assert(Split >= 1 && R::kRows % Split == 0, "a split of the tile's rows");
  extern __shared__ unsigned char smem_raw[];
  // Aligned by an offset from smem_raw, not through an integer: the compiler then knows every
  // access through it is shared (st.shared, not a generic store that checks its window).
  unsigned char* smem =
      smem_raw + (config::kWgmmaAlign - tma::shared_address(smem_raw) % config::kWgmmaAlign) %
                     config::kWgmmaAlign;
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + Stages * R::kStage);
  const R ring{smem, full, full + Stages, full + 2 * Stages};
  // Split 1: each consumer group's staging area for its epilogue, 64 rows of 32 + 8 floats.
  float* staging =
      reinterpret_cast<float*>(smem + config::wgmma_staging_offset(BN, Stages, Exact));

  const int tid = threadIdx.x, group = tid / 128, K = args.k;
  Work w;
  w.tiles_m = (args.m + R::kRows - 1) / R::kRows;
  w.tiles_n = (args.n + BN - 1) / BN;
  const int per = ((K + R::kDepth - 1) / R::kDepth + Split - 1) / Split;
  w.kt0 = Split > 1 ? int(blockIdx.z) * per : 0;
  w.ktiles = max(0, min((K + R::kDepth - 1) / R::kDepth - w.kt0, per));
  // Exact: an even number of stages (gemm_sm90_exact.cuh), the last maybe past K: all zeros.
  w.padded = Exact ? w.ktiles + (w.ktiles & 1) : w.ktiles;
  if (tid == 0) init_ring<Stages, Exact>(ring);
  __syncthreads();
  wait_for_previous_grid();  // the barriers are set up while the kernel before this one ends
  allow_next_grid();

  float acc[BN / 2];
  if (group == 0) {
    // Split 1: 40 registers a producer thread, 232 a consumer's (128 x 40 + 256 x 232 <= 64 K).
    // A split's epilogue runs on every thread: its registers stay at 168 for all.
    if constexpr (Split == 1) wgmma::registers_down<40>();
    if (tid == 0) produce(ring, w);
    if constexpr (Exact) {
      const int tiles = w.tiles_m * w.tiles_n - int(blockIdx.x);
      if (tid >= 32 && tiles > 0)
        split_stages<R::kTileB, Stages, R::kStage, R::kTileA>(
            smem, ring.full, ring.split, (tiles + gridDim.x - 1) / gridDim.x * w.padded, tid - 32);
    }
  } else {
    if constexpr (Split == 1) wgmma::registers_up<232>();
    consume<T, Epi, Bias, BN, Stages, BTrans, V, Exact, Split, Images, Store, Columns>(
        args, ring, w, acc, smem, staging, map_c, tid);
  }
  if constexpr (Split > 1) {  // one tile a block: blockIdx.x's
    int tm, tn;
    tile_of(blockIdx.x, w.tiles_m, w.tiles_n, tm, tn);
    cluster_epilogue<T, Epi, Bias, BN, V, Split, Images>(args, acc, smem, tm * R::kRows, tn * BN,
                                                         tid);
  }
}
#endif

template <class T, class Epi, bool Bias, int BN, int Stages, int BTrans, int V, bool Exact,
          int Split, bool Store, bool Columns>
__global__ void __launch_bounds__(config::kWgmmaThreads, 1)
    gemm_sm90(const Args<Epi::Outputs::size + 2 + Bias + Epi::Inputs::size, Epi::scalars> args,
              const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
              const __grid_constant__ TensorMap map_c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using R = Ring<T, BN, Stages, Exact>;
  sm90_block<T, Epi, Bias, BN, Stages, BTrans, V, Exact, Split, false, Store, Columns>(
      args, &map_c, [&](const R& ring, const Work& w) {
        produce<R, BN, Stages, BTrans>(ring, &map_a, &map_b, w, args.k);
      });
#endif
}

}  // namespace kiln::gemm
