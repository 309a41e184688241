#pragma once
// The GEMM epilogue (included from gemm.cuh): at row r, columns c..c+V-1 of C, v = acc (+ bias),
// Epi::apply(x, s, y) per column with the epilogue's inputs in x and v after them, y to the
// outputs. With V > 1 the host guarantees (engine/families/gemm/gemm_problem.cpp, epilogue_columns)
// that every output and the bias run contiguously along N, each input contiguously or not at
// all (a per-row operand), each 16-byte aligned at every row, N and each output's column window
// multiples of V: a thread's V columns load and store as whole vectors, and their address math
// is done once.

namespace kiln::gemm {

/// V elements of U as one aligned access (16-byte pieces, or the whole if smaller).
template <class U, int V>
struct alignas(sizeof(U) * V < 16 ? sizeof(U) * V : 16) Pack {
  U v[V];
};

/// x[0..V) = slot `slot`'s V elements from element `at` (one value for all where the slot does
/// not vary along N).
template <class U, int V, int P, int S>
__device__ __forceinline__ void load_columns(float (&x)[V], const Args<P, S>& args, int slot,
                                             long long at) {
  const U* p = static_cast<const U*>(args.p[slot]) + at;
  if (V == 1 || args.col[slot] == 0) {
    const float v = to_float(p[0]);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = v;
  } else {
    const Pack<U, V> pk = *reinterpret_cast<const Pack<U, V>*>(p);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = to_float(pk.v[i]);
  }
}

/// x[i][J..] = the epilogue's inputs (slots from `first`) at row r, columns c + i.
template <class Ins, int J, int V, int N, int P, int S>
__device__ __forceinline__ void read_inputs(float (&x)[V][N], const Args<P, S>& args, int first,
                                            const long long (&bi)[kBatchDims], long long r,
                                            long long c) {
  if constexpr (J < Ins::size) {
    using U = typename detail::TypeAt<J, Ins>::type;
    const int slot = first + J;
    float v[V];
    load_columns<U, V>(
        v, args, slot, batch_offset(args, slot, bi) + r * args.row[slot] + c * args.col[slot]);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i][J] = v[i];
    read_inputs<Ins, J + 1>(x, args, first, bi, r, c);
  }
}

/// The outputs (slots 0..) from y[i][J..] at row r, columns c + i: those whose column window
/// [lo, hi) of the product holds c.
template <class Outs, int J, int V, int N, int P, int S>
__device__ __forceinline__ void write_outputs(const float (&y)[V][N], const Args<P, S>& args,
                                              const long long (&bi)[kBatchDims], long long r,
                                              long long c) {
  if constexpr (J < Outs::size) {
    using U = typename detail::TypeAt<J, Outs>::type;
    if (c >= args.lo[J] && c < args.hi[J]) {
      U* p = static_cast<U*>(args.p[J]) + batch_offset(args, J, bi) + r * args.row[J] +
             c * args.col[J];
      if constexpr (V == 1) {
        *p = from_float<U>(y[0][J]);
      } else {
        Pack<U, V> pk;
#pragma unroll
        for (int i = 0; i < V; ++i) pk.v[i] = from_float<U>(y[i][J]);
        *reinterpret_cast<Pack<U, V>*>(p) = pk;
      }
    }
    write_outputs<Outs, J + 1>(y, args, bi, r, c);
  }
}

/// The epilogue at row r, columns c..c+V-1 of batch `bi` from the products v: v plus the bias
/// (if Bias, slot NO + 2; its elements from bias_c0 + c), the epilogue's inputs (slots from
/// NO + 2 + Bias), Epi, the outputs.
template <class T, class Epi, bool Bias, int V, int P, int S>
__device__ __forceinline__ void epilogue_at(const Args<P, S>& args,
                                            const long long (&bi)[kBatchDims], long long r,
                                            long long c, const float (&v)[V],
                                            long long bias_c0 = 0) {
  constexpr int NO = Epi::Outputs::size, NE = Epi::Inputs::size;
  float x[V][NE + 1], y[V][NO];
  read_inputs<typename Epi::Inputs, 0>(x, args, NO + 2 + (Bias ? 1 : 0), bi, r, c);
#pragma unroll
  for (int i = 0; i < V; ++i) x[i][NE] = v[i];
  if constexpr (Bias) {
    float bias[V];
    load_columns<T, V>(bias, args, NO + 2, (bias_c0 + c) * args.col[NO + 2]);
#pragma unroll
    for (int i = 0; i < V; ++i) x[i][NE] += bias[i];
  }
#pragma unroll
  for (int i = 0; i < V; ++i) Epi::apply(x[i], args.s, y[i]);
  write_outputs<typename Epi::Outputs, 0>(y, args, bi, r, c);
}

/// Whether slot `slot` steps along N alone (not along rows or batches): a per-column operand,
/// a batch norm's statistics or a scale.
template <int P, int S>
__device__ __forceinline__ bool per_column(const Args<P, S>& args, int slot) {
  bool alone = args.row[slot] == 0;
#pragma unroll
  for (int d = 0; d < kBatchDims; ++d) alone = alone && args.batch[slot][d] == 0;
  return alone;
}

/// Whether every input of the epilogue (NE slots from `first`) is per_column, so that rows at
/// the same columns share their values (epilogue_pair_at).
template <int NE, int P, int S>
__device__ __forceinline__ bool inputs_per_column(const Args<P, S>& args, int first) {
  bool all = true;
#pragma unroll
  for (int j = 0; j < NE; ++j) all = all && per_column(args, first + j);
  return all;
}

/// epilogue_at of two rows at the same columns (batch bi0, row r0 and bi1, r1; products v0 and
/// v1) where inputs_per_column holds: the inputs (and the bias) loaded once, and what Epi
/// computes from them alone (a batch norm's scale and shift) computed once, the compiler seeing
/// the same values in both rows.
template <class T, class Epi, bool Bias, int V, int P, int S>
__device__ __forceinline__ void epilogue_pair_at(const Args<P, S>& args,
                                                 const long long (&bi0)[kBatchDims], long long r0,
                                                 const long long (&bi1)[kBatchDims], long long r1,
                                                 long long c, const float (&v0)[V],
                                                 const float (&v1)[V]) {
  constexpr int NO = Epi::Outputs::size, NE = Epi::Inputs::size;
  float x0[V][NE + 1], x1[V][NE + 1], y0[V][NO], y1[V][NO];
  read_inputs<typename Epi::Inputs, 0>(x0, args, NO + 2 + (Bias ? 1 : 0), bi0, r0, c);
#pragma unroll
  for (int i = 0; i < V; ++i) {
#pragma unroll
    for (int j = 0; j < NE; ++j) x1[i][j] = x0[i][j];
    x0[i][NE] = v0[i], x1[i][NE] = v1[i];
  }
  if constexpr (Bias) {
    float bias[V];
    load_columns<T, V>(bias, args, NO + 2, c * args.col[NO + 2]);
#pragma unroll
    for (int i = 0; i < V; ++i) x0[i][NE] += bias[i], x1[i][NE] += bias[i];
  }
#pragma unroll
  for (int i = 0; i < V; ++i) {
    Epi::apply(x0[i], args.s, y0[i]);
    Epi::apply(x1[i], args.s, y1[i]);
  }
  write_outputs<typename Epi::Outputs, 0>(y0, args, bi0, r0, c);
  write_outputs<typename Epi::Outputs, 0>(y1, args, bi1, r1, c);
}

}  // namespace kiln::gemm
