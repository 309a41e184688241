#pragma once
// An attention kernel's prologue: q's elementwise producers (a cast, a sum) computed as its tile
// is loaded, so q itself is never written. Pro is a body struct of elementwise.cuh's form whose
// output 0 is q's element, rounded to the kernel's type; its input 0 is read at q's slot
// (Params::ptr[kQ] and s[kQ]: the prologue's first input seen over q's [batch..., heads, rows,
// cols], strides 0 where it broadcasts), inputs 1 and on at Params::epi's slots after the
// epilogue's, its scalars after the epilogue's. Pro = void: the kernel loads q as it is.
// A prologue costs a load per element and operand instead of a 16-byte copy per 8 elements; q
// is loaded once per tile of rows, under every tile of keys that tile then reads.

#include <kiln/attention_epilogue.cuh>

namespace kiln::attention {

template <class Pro>
struct HasPrologue {
  static constexpr bool value = true;
};
template <>
struct HasPrologue<void> {
  static constexpr bool value = false;
};

/// The epilogue slots and scalars Epi takes: the prologue's come after them.
template <class Epi>
struct EpilogueUse {
  static constexpr int slots = Epi::Outputs::size - 1 + Epi::Inputs::size;
  static constexpr int scalars = Epi::scalars;
};
template <>
struct EpilogueUse<void> {
  static constexpr int slots = 0, scalars = 0;
};

/// Where input J.. of the prologue holds element (bi, h, i, c0) (`at`), and its column stride.
template <class Epi, class Ins, int J, int N>
__device__ __forceinline__ void prologue_rows(const void* (&at)[N], long long (&col)[N],
                                              const config::Params& p,
                                              const long long (&bi)[config::kBatchDims], int h,
                                              int i, int c0) {
  if constexpr (J < Ins::size) {
    using U = typename detail::TypeAt<J, Ins>::type;
    constexpr int slot = EpilogueUse<Epi>::slots + J - 1;
    const config::Strides& s = J == 0 ? p.s[config::kQ] : p.epi.s[slot];
    const U* base = reinterpret_cast<const U*>(J == 0 ? p.ptr[config::kQ] : p.epi.ptr[slot]);
    at[J] = base + element_at(s, bi, h, i, c0);
    col[J] = s.col;
    prologue_rows<Epi, Ins, J + 1>(at, col, p, bi, h, i, c0);
  }
}

/// x[J..] = the prologue's inputs J.. e columns on from `at`.
template <class Ins, int J, int N>
__device__ __forceinline__ void prologue_columns(float (&x)[N], const void* const (&at)[N],
                                                 const long long (&col)[N], int e) {
  if constexpr (J < Ins::size) {
    using U = typename detail::TypeAt<J, Ins>::type;
    x[J] = to_float(reinterpret_cast<const U*>(at[J])[e * col[J]]);
    prologue_columns<Ins, J + 1>(x, at, col, e);
  }
}

/// The prologue along q's row i of head h from column c0: each input's place found once, then
/// the value e columns on for each e.
template <class Pro, class Epi>
struct PrologueRow {
  static constexpr int NI = Pro::Inputs::size;
  static_assert(Pro::Outputs::size == 1 && NI >= 1, "one output, q's, from one input or more");
  static_assert(EpilogueUse<Epi>::slots + NI - 1 <= config::kEpilogueSlots &&
                    EpilogueUse<Epi>::scalars + Pro::scalars <= config::kEpilogueScalars,
                "the prologue's tensors and scalars fit Params::epi beside the epilogue's");
  const void* at[NI];
  long long col[NI];

  __device__ __forceinline__ PrologueRow(const config::Params& p,
                                         const long long (&bi)[config::kBatchDims], int h, int i,
                                         int c0) {
    prologue_rows<Epi, typename Pro::Inputs, 0>(at, col, p, bi, h, i, c0);
  }
  __device__ __forceinline__ float value(const config::Params& p, int e) const {
    float x[NI], y[1];
    prologue_columns<typename Pro::Inputs, 0>(x, at, col, e);
    Pro::apply(x, p.epi.scalars + EpilogueUse<Epi>::scalars, y);
    return y[0];
  }
};

/// q's element (bi, h, i, c) in the kernel's type T, from the prologue's inputs there.
template <class T, class Pro, class Epi>
__device__ __forceinline__ T prologue_element(const config::Params& p,
                                              const long long (&bi)[config::kBatchDims], int h,
                                              int i, int c) {
  return from_float<T>(PrologueRow<Pro, Epi>(p, bi, h, i, c).value(p, 0));
}

/// Eight columns of q's row i from column c0 (zeros past D and for rows past Sq), as one 16-byte
/// piece of a 16-bit T.
template <class T, class Pro, class Epi, int D>
__device__ __forceinline__ uint4 prologue_piece(const config::Params& p,
                                                const long long (&bi)[config::kBatchDims], int h,
                                                int i, int c0) {
  static_assert(sizeof(T) == 2, "the tensor-core paths' 16-bit q");
  const PrologueRow<Pro, Epi> row(p, bi, h, i, c0);
  alignas(16) T v[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = from_float<T>(i < p.sq && c0 + e < D ? row.value(p, e) : 0.0f);
  return *reinterpret_cast<const uint4*>(v);
}

/// Pieces [0, Count) of a Q tile, piece k = tid + n Threads computed by `at(k, to, h, i, c0)`
/// (its shared address, head, row and first column), in batches whose loads are all issued
/// before any store: a store through a generic pointer could alias them, which would keep each
/// piece's loads behind the last piece's store (one memory latency a piece). Batch: the most
/// pieces in flight (registers: 6 a piece).
template <class T, class Pro, class Epi, int D, int Count, int Threads, int Batch, class At>
__device__ __forceinline__ void prologue_pieces(const config::Params& p,
                                                const long long (&bi)[config::kBatchDims], int tid,
                                                At at) {
  constexpr int kIters = (Count + Threads - 1) / Threads, kBatch = kIters < Batch ? kIters : Batch;
#pragma unroll 1
  for (int n0 = 0; n0 < kIters; n0 += kBatch) {
    uint4 v[kBatch];
    T* to[kBatch];
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const int k = tid + (n0 + n) * Threads;
      to[n] = nullptr;
      int h = 0, i = 0, c0 = 0;
      if (n0 + n < kIters && k < Count) {
        at(k, to[n], h, i, c0);
        v[n] = prologue_piece<T, Pro, Epi, D>(p, bi, h, i, c0);
      }
    }
#pragma unroll
    for (int n = 0; n < kBatch; ++n)
      if (to[n]) *reinterpret_cast<uint4*>(to[n]) = v[n];
  }
}

/// Rows [m0, m0 + Rows) of q's head h (batch indices bi) by the prologue into a shared tile of
/// rows of Ld elements (attention.cuh's Q tile), rows past Sq and columns past D zeros. Plain
/// stores: the barrier before the tile's first read publishes them.
template <class T, class Pro, class Epi, int D, int Rows, int Ld, int Threads>
__device__ __forceinline__ void prologue_tile(T* tile, const config::Params& p,
                                              const long long (&bi)[config::kBatchDims], int h,
                                              int m0, int tid) {
  constexpr int kPieces = config::padded_d(D) / 8;
  prologue_pieces<T, Pro, Epi, D, Rows * kPieces, Threads, 8>(
      p, bi, tid, [&](int k, T*& to, int& head, int& i, int& c0) {
        const int r = k / kPieces, piece = k % kPieces;
        to = tile + r * Ld + piece * 8;
        head = h, i = m0 + r, c0 = piece * 8;
      });
}

/// The decode path's packed rows [rho0, rho0 + Rows) (row rho: query row rho / group of head
/// h0 + rho % group) by the prologue into its Q tile, as prologue_tile.
template <class T, class Pro, class Epi, int D, int Rows, int Ld, int Threads>
__device__ __forceinline__ void prologue_packed(T* tile, const config::Params& p,
                                                const long long (&bi)[config::kBatchDims], int h0,
                                                int rho0, int tid) {
  constexpr int kPieces = config::padded_d(D) / 8;
  prologue_pieces<T, Pro, Epi, D, Rows * kPieces, Threads, 8>(
      p, bi, tid, [&](int k, T*& to, int& head, int& i, int& c0) {
        const int r = k / kPieces, piece = k % kPieces, x = rho0 + r;
        to = tile + r * Ld + piece * 8;
        head = h0 + x % p.group;
        i = x < p.sq * p.group ? x / p.group : p.sq;  // past the call: zeros
        c0 = piece * 8;
      });
}

/// The sm_90a path's consumer group c: its 64 rows (m0 + 64 c on) of the item's Q tile by the
/// prologue, in the layout TMA's 128-byte swizzle gives (atoms of Rows rows by 64 columns, 1024-
/// byte aligned; 16-byte piece j of row r at position j ^ (r % 8)), `tid` the thread's rank in
/// the group. The caller fences them for the async proxy and syncs the group before the
/// tensor cores read them. Four pieces in flight: eight spilled beside the output's registers
/// in wider tiles of the tuning space (160 keys at D 128, 96 at D 192).
template <class T, class Pro, class Epi, int D, int Dp, int Rows>
__device__ __forceinline__ void prologue_swizzled(unsigned char* q, const config::Params& p,
                                                  const long long (&bi)[config::kBatchDims], int h,
                                                  int m0, int c, int tid) {
  constexpr int kPieces = Dp / 8;
  prologue_pieces<T, Pro, Epi, D, 64 * kPieces, 128, 4>(
      p, bi, tid, [&](int k, T*& to, int& head, int& i, int& c0) {
        const int r = c * 64 + k / kPieces, piece = k % kPieces, j = piece % 8;
        to = reinterpret_cast<T*>(q + piece / 8 * Rows * 128 + r * 128 + (j ^ (r & 7)) * 16);
        head = h, i = m0 + r, c0 = piece * 8;
      });
}

}  // namespace kiln::attention
