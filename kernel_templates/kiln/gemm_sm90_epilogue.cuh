#pragma once
// The epilogue of gemm_sm90.cuh's block (and so of conv_sm90's): a consumer group's accumulator
// fragments staged in shared memory a chunk of columns at a time and walked along rows (Split
// 1), or the whole tile summed over a cluster's blocks (Split > 1); each V columns of a row then
// through gemm_epilogue.cuh's epilogue_at (Split 1 with a plain, dense output: gemm_sm90_held.cuh's
// stored_epilogue instead). Also the prefetch of the epilogue's per-column operands that the
// consumer groups issue before a tile's products.

#include <kiln/gemm.cuh>
#include <kiln/gemm_config.cuh>
#include <kiln/tma.cuh>

namespace kiln::gemm {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// This thread's accumulator fragments of n8 steps j0..j0 + NJ (wgmma's: columns 8j + 2t and
/// + 1 of rows r and r + 8) into `tile` (`Ld` floats a row), step j0 at column 0.
template <int NJ, int Ld, int N>
__device__ __forceinline__ void stage_fragments(float* tile, const float (&acc)[N], int j0, int r,
                                                int t) {
#pragma unroll
  for (int j = 0; j < NJ; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int at = 4 * (j0 + j) + 2 * h;
      *reinterpret_cast<float2*>(tile + (r + 8 * h) * Ld + 8 * j + 2 * t) =
          make_float2(acc[at], acc[at + 1]);
    }
}

/// stage_fragments of chunk `q` (NJ n8 steps a chunk), q known only at run time: one branch per
/// chunk, each indexing acc statically (a register array indexed at run time would go to local
/// memory).
template <int Q, int Chunks, int NJ, int Ld, int N>
__device__ __forceinline__ void stage_chunk(float* tile, const float (&acc)[N], int q, int r,
                                            int t) {
  if constexpr (Q < Chunks) {
    if (q == Q)
      stage_fragments<NJ, Ld>(tile, acc, Q * NJ, r, t);
    else
      stage_chunk<Q + 1, Chunks, NJ, Ld>(tile, acc, q, r, t);
  }
}

/// Row m of the product as the epilogue addresses it: for a convolution (Images) image
/// m / pq and pixel m % pq (pq = args.batch_ext[0]); else image 0 and m.
template <bool Images, class A>
__device__ __forceinline__ void image_pixel(const A& args, int m, long long& image, int& pixel) {
  image = 0, pixel = m;
  if constexpr (Images) {
    const int pq = int(args.batch_ext[0]), i = m / pq;
    image = i, pixel = m - i * pq;
  }
}

/// The epilogue of a split tile from the accumulator tiles staged in the shared memory of the
/// cluster's blocks (`Ld` floats a row), summed over them: rows r0..r0 + R of the tile, its
/// first C columns, V columns a thread of `Threads` from `me`, along rows so that loads and
/// stores coalesce. `rows` and `cols`: how many of the tile's rows and columns lie in C; the
/// tile's (0, 0) is C's (m0, n0). A thread's loads of kBatch vectors are issued before the
/// first is used: a load from another block's shared memory takes hundreds of cycles, and
/// paying that once a vector made the epilogue a third of a split convolution's time.
/// Images (a convolution's rows, output pixels): row m is pixel m % pq of image m / pq (pq =
/// args.batch_ext[0]), each slot's offset image * batch[slot][0] + pixel * row[slot], so that
/// an operand may step per image alone (a time embedding [N, K, 1, 1]).
template <class T, class Epi, bool Bias, int V, int R, int C, int Ld, int Threads, int Split,
          bool Images, class A>
__device__ __forceinline__ void epilogue_rows(const A& args, const float* tile, int r0, int rows,
                                              int cols, int m0, int n0, int me) {
  constexpr int kVecs = C / V, kAll = R * kVecs, kEach = (kAll + Threads - 1) / Threads;
  constexpr int kBatch = kEach < 4 ? kEach : 4;
  const unsigned rank = split_rank<Split>();
#pragma unroll 1
  for (int e0 = me; e0 < kAll; e0 += kBatch * Threads) {
    float v[kBatch][V];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int e = e0 + b * Threads, r = r0 + e / kVecs, col = e % kVecs * V;
      if (e < kAll && r < rows && col < cols) split_sum<Split>(tile, r * Ld + col, rank, v[b]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int e = e0 + b * Threads, r = r0 + e / kVecs, col = e % kVecs * V;
      if (e >= kAll || r >= rows || col >= cols) continue;
      long long bi[kBatchDims] = {0, 0, 0, 0};
      int m;
      image_pixel<Images>(args, m0 + r, bi[0], m);
      epilogue_at<T, Epi, Bias, V>(args, bi, m, n0 + col, v[b]);
    }
  }
}

/// v = V staged floats from `at` (16-byte aligned where V is a multiple of 4: the rows are
/// kStagingLd floats, the columns multiples of V), as whole vectors.
template <int V>
__device__ __forceinline__ void load_staged(float (&v)[V], const float* at) {
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int i = 0; i < V; i += 4) {
      const float4 f = *reinterpret_cast<const float4*>(at + i);
      v[i] = f.x, v[i + 1] = f.y, v[i + 2] = f.z, v[i + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = at[i];
  }
}

/// The epilogue's per-column operands of columns n0..n0 + BN (the inputs among Ins, from slot
/// `first`, that step along N alone: a batch norm's statistics, a bias) into L1 while the
/// tile's products run, one line a thread of `me` < 128: the epilogue's loads of them then hit
/// (they were a third of a fused batch norm's stalls).
template <class Ins, int J, int BN, class A>
__device__ __forceinline__ void prefetch_columns(const A& args, int first, int n0, int me) {
  if constexpr (J < Ins::size) {
    using U = typename detail::TypeAt<J, Ins>::type;
    const int slot = first + J;
    const long long cols = min(args.n - n0, BN);
    const long long bytes = ((cols - 1) * args.col[slot] + 1) * (long long)sizeof(U);
    if (per_column(args, slot) && me * 128LL < bytes) {
      const char* p = reinterpret_cast<const char*>(static_cast<const U*>(args.p[slot]) +
                                                    n0 * args.col[slot]);
      asm volatile("prefetch.global.L1 [%0];" ::"l"(p + me * 128));
    }
    prefetch_columns<Ins, J + 1, BN>(args, first, n0, me);
  }
}

/// prefetch_columns of the epilogue's bias and inputs (slots NO + 2 on) for columns n0..n0 + BN.
template <class T, class Epi, bool Bias, int BN, class A>
__device__ __forceinline__ void prefetch_epilogue(const A& args, int n0, int me) {
  constexpr int first = Epi::Outputs::size + 2;
  if constexpr (Bias) prefetch_columns<Types<T>, 0, BN>(args, first, n0, me);
  prefetch_columns<typename Epi::Inputs, 0, BN>(args, first + (Bias ? 1 : 0), n0, me);
}

/// Columns: this consumer thread's (`me` < 256) column of the tile, n0 + me, of the bias (if
/// Bias) and of each epilogue input (all per column), into v as floats; 0 past N or BN. Loaded
/// before the tile's products, so that their latency hides behind them.
template <class Ins, int J, int BN, int N, class A>
__device__ __forceinline__ void take_inputs(const A& args, int first, long long n, bool in,
                                            float (&v)[N], int at) {
  if constexpr (J < Ins::size) {
    using U = typename detail::TypeAt<J, Ins>::type;
    const int slot = first + J;
    v[at] = in ? to_float(static_cast<const U*>(args.p[slot])[n * args.col[slot]]) : 0.0f;
    take_inputs<Ins, J + 1, BN>(args, first, n, in, v, at + 1);
  }
}
template <class T, class Epi, bool Bias, int BN, int N, class A>
__device__ __forceinline__ void take_columns(const A& args, int n0, int me, float (&v)[N]) {
  constexpr int NO = Epi::Outputs::size;
  const long long n = n0 + me;
  const bool in = me < BN && n < args.n;
  if constexpr (Bias)
    v[0] = in ? to_float(static_cast<const T*>(args.p[NO + 2])[n * args.col[NO + 2]]) : 0.0f;
  take_inputs<typename Epi::Inputs, 0, BN>(args, NO + 2 + (Bias ? 1 : 0), n, in, v, Bias ? 1 : 0);
}

/// The operands an epilogue reads at V columns from `cols` in shared memory (row j, `ld` floats,
/// holds operand j's values from these columns: the bias first, if Bias, then what ColumnMath
/// made of the inputs, all per column) into x[i][0, NE) and bias.
template <class Epi, bool Bias, int V, int NE>
__device__ __forceinline__ void load_column_operands(float (&x)[V][NE + 1], float (&bias)[V],
                                                     const float* cols, int ld) {
#pragma unroll
  for (int i = 0; i < V; ++i) bias[i] = 0.0f;
  if constexpr (Bias) load_staged<V>(bias, cols);
#pragma unroll
  for (int j = 0; j < NE; ++j) {
    float w[V];
    load_staged<V>(w, cols + (j + (Bias ? 1 : 0)) * ld);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i][j] = w[i];
  }
}

/// epilogue_at with its operands read from `cols` (load_column_operands): one row.
template <class T, class Epi, bool Bias, int V, class A>
__device__ __forceinline__ void epilogue_at_columns(const A& args,
                                                    const long long (&bi)[kBatchDims], long long r,
                                                    long long c, const float (&v)[V],
                                                    const float* cols, int ld) {
  constexpr int NO = Epi::Outputs::size, NE = ColumnMath<Epi>::kStaged;
  float x[V][NE + 1], y[V][NO], bias[V];
  load_column_operands<Epi, Bias, V, NE>(x, bias, cols, ld);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    x[i][NE] = v[i] + bias[i];
    Epi::apply(x[i], args.s, y[i]);
  }
  write_outputs<typename Epi::Outputs, 0>(y, args, bi, r, c);
}

/// The same for two rows at the same columns, the operands loaded once.
template <class T, class Epi, bool Bias, int V, class A>
__device__ __forceinline__ void epilogue_pair_at_columns(const A& args,
                                                         const long long (&bi0)[kBatchDims],
                                                         long long r0,
                                                         const long long (&bi1)[kBatchDims],
                                                         long long r1, long long c,
                                                         const float (&v0)[V],
                                                         const float (&v1)[V], const float* cols,
                                                         int ld) {
  constexpr int NO = Epi::Outputs::size, NE = ColumnMath<Epi>::kStaged;
  float x0[V][NE + 1], x1[V][NE + 1], y0[V][NO], y1[V][NO], bias[V];
  load_column_operands<Epi, Bias, V, NE>(x0, bias, cols, ld);
#pragma unroll
  for (int i = 0; i < V; ++i) {
#pragma unroll
    for (int j = 0; j < NE; ++j) x1[i][j] = x0[i][j];
    x0[i][NE] = v0[i] + bias[i], x1[i][NE] = v1[i] + bias[i];
    Epi::apply(x0[i], args.s, y0[i]);
    Epi::apply(x1[i], args.s, y1[i]);
  }
  write_outputs<typename Epi::Outputs, 0>(y0, args, bi0, r0, c);
  write_outputs<typename Epi::Outputs, 0>(y1, args, bi1, r1, c);
}

/// The epilogue of consumer group `c`'s 64 rows, kChunk columns at a time: its fragments
/// (wgmma's: per n8 step j, columns 8j + 2t and + 1 of rows r and r + 8) into the group's own
/// staging area `stage` (the ring stays the producer's, already loading the next tile), then
/// walked along rows, V columns a thread: loads and stores as vectors, their addresses computed
/// once per V columns. A named barrier per group (ids 2 and 3) orders the writes and the reads.
/// A thread walks the same rows (kPasses of them, kStep apart) and the same V columns of every
/// chunk: with V 8 and chunks of 32 (two passes) each row's image and pixel are found once a tile
/// (a division per vector was a third of a convolution's epilogue instructions) and the passes
/// unrolled, the two rows sharing the inputs where none steps along rows (epilogue_pair_at);
/// otherwise (V 1, or chunks of 16 where BN is 80) each pass finds its row's anew. The
/// chunks are a rolled loop: the epilogue's code exists once or twice, not once per chunk (a
/// long fused epilogue unrolled BN / kChunk times outgrew the instruction cache: a batch norm and
/// a SiLU after a convolution compiled to 115 KB of cubin against its 36 KB alone).
template <class T, class Epi, bool Bias, int BN, int V, bool Images, bool Columns, class A>
__device__ __forceinline__ void staged_epilogue(const A& args, const float (&acc)[BN / 2],
                                                float* stage, const float* operands, int m0,
                                                int n0, int c, int tid) {
  constexpr int kChunk = BN % config::kStagingChunk == 0 ? config::kStagingChunk : 16;
  constexpr int kLd = config::kStagingLd;
  constexpr int kVecs = kChunk / V, kStep = 128 / kVecs, kPasses = 64 / kStep;
  constexpr int kHeld = kPasses == 2 ? 2 : 1;  // passes whose rows are found once a tile
  static_assert(BN % kChunk == 0 && kChunk % V == 0 && 128 % kVecs == 0 && 64 % kStep == 0,
                "whole chunks and passes");
  const int me = tid % 128, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int r = me / 32 * 16 + g;  // this thread's fragment rows r, r + 8 of the group's 64
  const int rows = min(args.m - m0 - c * 64, 64);
  const int r0 = me / kVecs, col = me % kVecs * V;  // its epilogue rows r0 + p * kStep, columns
  long long image[kHeld];
  int pixel[kHeld];
#pragma unroll
  for (int p = 0; p < kHeld; ++p)
    image_pixel<Images>(args, m0 + c * 64 + r0 + p * kStep, image[p], pixel[p]);
  constexpr int kFirstInput = Epi::Outputs::size + 2 + (Bias ? 1 : 0);
  const bool shared_inputs = inputs_per_column<Epi::Inputs::size>(args, kFirstInput);
  auto walk = [&](int p, long long im, int px, int n) {
    float v[V];
    load_staged<V>(v, stage + (r0 + p * kStep) * kLd + col);
    const long long bi[kBatchDims] = {im, 0, 0, 0};
    if constexpr (Columns)  // the epilogue reads what was staged (ColumnMath), not the inputs
      epilogue_at_columns<T, Epi, Bias, V>(args, bi, px, n, v, operands + (n - n0), BN);
    else
      epilogue_at<T, Epi, Bias, V>(args, bi, px, n, v);
  };
#pragma unroll 1
  for (int q = 0; q < BN / kChunk; ++q) {
    const int cols = min(args.n - n0 - q * kChunk, kChunk), n = n0 + q * kChunk + col;
    asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");  // the last chunk's reads done
    stage_chunk<0, BN / kChunk, kChunk / 8, kLd>(stage, acc, q, r, t);
    asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
    if (col >= cols) continue;
    if constexpr (kPasses == 2) {
      if (shared_inputs && r0 + kStep < rows) {  // both rows, the inputs loaded and used once
        float v0[V], v1[V];
        load_staged<V>(v0, stage + r0 * kLd + col);
        load_staged<V>(v1, stage + (r0 + kStep) * kLd + col);
        const long long bi0[kBatchDims] = {image[0], 0, 0, 0};
        const long long bi1[kBatchDims] = {image[1], 0, 0, 0};
        if constexpr (Columns)
          epilogue_pair_at_columns<T, Epi, Bias, V>(args, bi0, pixel[0], bi1, pixel[1], n, v0,
                                                    v1, operands + (n - n0), BN);
        else
          epilogue_pair_at<T, Epi, Bias, V>(args, bi0, pixel[0], bi1, pixel[1], n, v0, v1);
      } else {
#pragma unroll
        for (int p = 0; p < kPasses; ++p)
          if (r0 + p * kStep < rows) walk(p, image[p], pixel[p], n);
      }
    } else {
#pragma unroll 1
      for (int p = 0; p < kPasses && r0 + p * kStep < rows; ++p) {
        long long im;
        int px;
        image_pixel<Images>(args, m0 + c * 64 + r0 + p * kStep, im, px);
        walk(p, im, px, n);
      }
    }
  }
}

/// Split > 1: the tile through the ring (free once every block's copies landed and products
/// are done), summed over the cluster, then this block's share of its rows, V columns a thread.
template <class T, class Epi, bool Bias, int BN, int V, int Split, bool Images, class A>
__device__ __forceinline__ void cluster_epilogue(const A& args, const float (&acc)[BN / 2],
                                                 unsigned char* smem, int m0, int n0, int tid) {
  constexpr int BM = config::kWgmmaRows, kLd = config::wgmma_tile_ld(BN);
  constexpr int kThreads = config::kWgmmaThreads;
  __syncthreads();
  float* tile = reinterpret_cast<float*>(smem);
  const int group = tid / 128;
  if (group > 0) {
    const int lane = tid & 31, warp = (tid / 32) % 4, g = lane >> 2, t = lane & 3;
    const int r = (group - 1) * 64 + warp * 16 + g;
    stage_fragments<BN / 8, kLd>(tile, acc, 0, r, t);
  }
  split_barrier<Split, true>();
  const int rows = min(args.m - m0, BM), cols = min(args.n - n0, BN);
  const int r0 = int(blockIdx.z) * (BM / Split);
  epilogue_rows<T, Epi, Bias, V, BM / Split, BN, kLd, kThreads, Split, Images>(args, tile, r0, rows,
                                                                               cols, m0, n0, tid);
  split_barrier<Split, false>();  // every block's tile is read before any block exits
}
#endif

}  // namespace kiln::gemm
