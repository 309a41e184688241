#pragma once
// The stored epilogue of gemm_sm90.cuh's block (Split 1, one dense output whose rows a tensor
// map covers, no bias, epilogue inputs only staged per column): the epilogue runs on a consumer group's accumulator
// fragments in registers, a chunk of columns at a time, each chunk written as the output's
// elements into one of the group's two buffers and stored by TMA while the next chunk and the
// next tile's products go on.
//
// Held chunks (convolutions): where the output has the product's own 16-bit type, a tile's
// last chunks are not stored when its products end; their values are packed to that type (the
// rounding the output makes anyway) and the next tile's products start at once. One held chunk
// is then stored between each of its first K steps' wgmma commit and wait, while the tensor
// cores run: the epilogue overlaps the products, as FlashAttention-3 overlaps its softmax with
// them. A fused activation after the product then reads the product rounded to 16 bits, as the
// unfused graph does.

#include <kiln/gemm.cuh>
#include <kiln/gemm_config.cuh>
#include <kiln/integer.cuh>
#include <kiln/tma.cuh>

namespace kiln::gemm {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// The chunks of a stored epilogue: kCols columns (64 bytes of the output a row), kNJ n8 steps.
template <class Epi, int BN>
struct StoreChunks {
  using U = typename detail::TypeAt<0, typename Epi::Outputs>::type;
  static constexpr int kCols = config::wgmma_store_cols(BN, int(sizeof(U)));
  static constexpr int kNJ = kCols / 8, kChunks = BN / kCols;
  static constexpr int kBuf = config::kStagingRows * kCols * int(sizeof(U));
  static_assert(Epi::Outputs::size == 1 && BN % kCols == 0, "one output, whole chunks");
};

/// How many of a tile's chunks a stored epilogue (Store) holds over into the next tile's
/// products: none unless the output is the product's own type T, 16 bits (its packing is the
/// output's rounding); every chunk up to 192 columns, 4 of 8 at 256 (the packed values share
/// the consumers' 232 registers with the 128 accumulators: 5 spilled). Convolutions only
/// (Images): a plain bf16 product of 4096^3, four tiles a block, ran 1 % slower holding, where
/// a convolution of two tiles a block (N8 C256 64x64) ran 2 % faster (bench/NOTES.md).
template <bool Store, bool Images, class T, class Epi, int BN, bool Exact>
__host__ __device__ constexpr int held_chunks() {
  if constexpr (!Store || !Images || Exact || sizeof(T) != 2) {
    return 0;
  } else {
    using S = StoreChunks<Epi, BN>;
    if constexpr (!Same<typename S::U, T>::value) return 0;
    return S::kChunks <= 6 ? S::kChunks : 4;
  }
}

/// v[4j + 2h + e] = acc's fragments of chunk q's NJ n8 steps, q known at run time only: one
/// branch per chunk, each indexing acc statically (a register array indexed at run time would go
/// to local memory).
template <int Q, int Chunks, int NJ, int N>
__device__ __forceinline__ void take_chunk(float (&v)[4 * NJ], const float (&acc)[N], int q) {
  if constexpr (Q < Chunks) {
    if (q == Q) {
#pragma unroll
      for (int i = 0; i < 4 * NJ; ++i) v[i] = acc[4 * NJ * Q + i];
    } else {
      take_chunk<Q + 1, Chunks, NJ>(v, acc, q);
    }
  }
}

/// One chunk of a consumer group's 64 rows (wgmma's fragments: per n8 step j, columns 8j + 2t
/// and + 1 of rows r and r + 8, in v[4j + 2h + e]) through the epilogue into `out` (64 rows of
/// the chunk's kCols columns) as the output's elements. The epilogue's operands (all per column:
/// ColumnMath's) come from `cols` (staged: operand i's value at the tile's column x in
/// cols[i * BN + x]), a pair of columns at a time; q0: the chunk's first column in the tile.
template <class Epi, int BN, class A, int NV>
__device__ __forceinline__ void write_chunk(const A& args, const float (&v)[NV], const float* cols,
                                            typename StoreChunks<Epi, BN>::U* out, int q0,
                                            int tid) {
  using S = StoreChunks<Epi, BN>;
  using U = typename S::U;
  constexpr int NE = ColumnMath<Epi>::kStaged;
  static_assert(NV == 4 * S::kNJ, "a chunk's fragments");
  const int lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int r = tid % 128 / 32 * 16 + g;
#pragma unroll
  for (int j = 0; j < S::kNJ; ++j) {
    const int col = 8 * j + 2 * t;
    float2 in[NE > 0 ? NE : 1];  // the inputs at this pair of columns
#pragma unroll
    for (int i = 0; i < NE; ++i)
      in[i] = *reinterpret_cast<const float2*>(cols + i * BN + q0 + col);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float y[2][1];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float x[NE + 1];
#pragma unroll
        for (int i = 0; i < NE; ++i) x[i] = e ? in[i].y : in[i].x;
        x[NE] = v[4 * j + 2 * h + e];
        Epi::apply(x, args.s, y[e]);
      }
      Pack<U, 2> pk;
      pk.v[0] = from_float<U>(y[0][0]), pk.v[1] = from_float<U>(y[1][0]);
      *reinterpret_cast<Pack<U, 2>*>(out + (r + 8 * h) * S::kCols + col) = pk;
    }
  }
}

/// One chunk of consumer group c's 64 rows (write_chunk) into one of the group's two buffers in
/// `stage` (from 128 bytes), then stored by the group's first thread at columns n0 + q0, rows m
/// of the output. A buffer is written again once the store before last has read it; `chunk`
/// counts the group's chunks (which buffer).
template <class Epi, int BN, class A, int NV>
__device__ __forceinline__ void store_chunk(const A& args, const float (&v)[NV], float* stage,
                                            const float* cols, const TensorMap* map, int m,
                                            int n0, int q0, int c, int tid, int& chunk) {
  using S = StoreChunks<Epi, BN>;
  using U = typename S::U;
  unsigned char* buf = reinterpret_cast<unsigned char*>(stage);
  buf += (config::kStoreAlign - tma::shared_address(buf) % config::kStoreAlign) %
         config::kStoreAlign;
  U* out = reinterpret_cast<U*>(buf + (chunk++ & 1) * S::kBuf);
  if (tid % 128 == 0) tma::store_wait_read<1>();
  asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");  // the buffer is free again
  write_chunk<Epi, BN>(args, v, cols, out, q0, tid);
  tma::fence_shared_async();
  asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");  // the chunk is written
  if (tid % 128 == 0) {
    tma::store_2d(map, out, n0 + q0, m);
    tma::store_commit();
  }
}

/// A consumer group's held chunks (H of them, the last H of a tile) and where they go. Every
/// thread of the group calls hold and drain at the same points (drain's barriers are the
/// group's).
template <class Epi, int BN, int H>
struct Held {
  using S = StoreChunks<Epi, BN>;
  static constexpr int kFirst = S::kChunks - H;  // the first held chunk of a tile
  unsigned v[H > 0 ? H : 1][2 * S::kNJ];         // its values, two to a register
  int next = H;                                  // the next chunk to store; H: none held
  int m = 0, n0 = 0;                             // the held tile's rows and first column

  /// Packs chunks kFirst.. of `acc` (the tile at rows m, columns n0..) to the output's type.
  template <int N>
  __device__ __forceinline__ void hold(const float (&acc)[N], int rows, int cols) {
#pragma unroll
    for (int q = 0; q < H; ++q)
#pragma unroll
      for (int i = 0; i < 2 * S::kNJ; ++i) {
        const int at = 4 * S::kNJ * (kFirst + q) + 2 * i;
        v[q][i] = pack2<typename S::U>(acc[at], acc[at + 1]);
      }
    next = 0, m = rows, n0 = cols;
  }

  /// Stores the next held chunk, if any (`cols`: the held tile's staged inputs, store_chunk).
  template <class A>
  __device__ __forceinline__ void drain(const A& args, float* stage, const float* cols,
                                        const TensorMap* map, int c, int tid, int& chunk) {
    if (next >= H) return;
    float f[4 * S::kNJ];
    unpack<0>(f, next);
    store_chunk<Epi, BN>(args, f, stage, cols, map, m, n0, (kFirst + next) * S::kCols, c, tid,
                         chunk);
    ++next;
  }

  /// Stores every chunk still held.
  template <class A>
  __device__ __forceinline__ void drain_all(const A& args, float* stage, const float* cols,
                                            const TensorMap* map, int c, int tid, int& chunk) {
#pragma unroll 1
    while (next < H) drain(args, stage, cols, map, c, tid, chunk);
  }

 private:
  /// f = held chunk q's values, q known at run time only (one branch per chunk, as take_chunk).
  template <int Q>
  __device__ __forceinline__ void unpack(float (&f)[4 * S::kNJ], int q) const {
    if constexpr (Q < H) {
      if (q == Q) {
#pragma unroll
        for (int i = 0; i < 2 * S::kNJ; ++i)
          unpack2<typename S::U>(v[Q][i], f[2 * i], f[2 * i + 1]);
      } else {
        unpack<Q + 1>(f, q);
      }
    }
  }
};

/// No chunk held: nothing to drain.
template <class Epi, int BN>
struct Held<Epi, BN, 0> {
  template <class A>
  __device__ __forceinline__ void drain(const A&, float*, const float*, const TensorMap*, int, int,
                                        int&) {}
  template <class A>
  __device__ __forceinline__ void drain_all(const A&, float*, const float*, const TensorMap*, int,
                                            int, int&) {}
};

/// The stored epilogue of consumer group c's 64 rows of the tile at (m0, n0): its chunks before
/// the held ones stored now, the held ones packed into `held` for the next tile's products to
/// store (Held::drain). The block's `last` tile has no next products to hide them under: every
/// chunk is stored now, the loop unrolled (no packing to hold and unpacking to store, no branch
/// table picking a chunk's registers: the tail of a block of one tile, bench/NOTES.md).
template <class Epi, int BN, int H, class A>
__device__ __forceinline__ void stored_epilogue(const A& args, const float (&acc)[BN / 2],
                                                float* stage, const float* cols,
                                                const TensorMap* map, int m0, int n0, int c,
                                                int tid, int& chunk, Held<Epi, BN, H>& held,
                                                bool last) {
  using S = StoreChunks<Epi, BN>;
  if (last) {
#pragma unroll
    for (int q = 0; q < S::kChunks; ++q) {
      float v[4 * S::kNJ];
#pragma unroll
      for (int i = 0; i < 4 * S::kNJ; ++i) v[i] = acc[4 * S::kNJ * q + i];
      store_chunk<Epi, BN>(args, v, stage, cols, map, m0 + c * 64, n0, q * S::kCols, c, tid,
                           chunk);
    }
    return;
  }
#pragma unroll 1
  for (int q = 0; q < S::kChunks - H; ++q) {
    float v[4 * S::kNJ];
    take_chunk<0, S::kChunks, S::kNJ>(v, acc, q);
    store_chunk<Epi, BN>(args, v, stage, cols, map, m0 + c * 64, n0, q * S::kCols, c, tid, chunk);
  }
  if constexpr (H > 0) held.hold(acc, m0 + c * 64, n0);
}
#endif

}  // namespace kiln::gemm
