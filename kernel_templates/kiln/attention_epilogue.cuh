#pragma once
// An attention kernel's epilogue: the elementwise consumers of its result (a cast, a scale, a
// gate, a residual add) computed where each element of the result is stored, so the result
// itself is never written unless something else reads it. Epi is a body struct of
// elementwise.cuh's form whose inputs are the consumers' other operands and, after them, the
// attention value; its output 0 goes where Params' kOut points, outputs 1 and on, then its
// inputs, take Params::epi's slots, each with strides over the result's [batch..., heads, rows,
// cols] (a broadcast operand's 0). Epi = void: no epilogue, the kernel stores the result.

#include <kiln/attention_common.cuh>
#include <kiln/ops.cuh>
#include <kiln/types.cuh>

namespace kiln::attention {

template <class Epi>
struct HasEpilogue {
  static constexpr bool value = true;
};
template <>
struct HasEpilogue<void> {
  static constexpr bool value = false;
};

/// Where element (batch indices `bi`, head `h`, row `i`, column `c`) lies in a tensor of
/// strides `s`, in elements.
__device__ __forceinline__ long long element_at(const config::Strides& s,
                                                const long long (&bi)[config::kBatchDims], int h,
                                                int i, int c) {
  long long o = h * s.head + (long long)i * s.row + (long long)c * s.col;
#pragma unroll
  for (int d = 0; d < config::kBatchDims; ++d) o += bi[d] * s.batch[d];
  return o;
}

/// x[J..] = the epilogue's inputs J.. (slots from `first`) at the element.
template <class Ins, int J, int N>
__device__ __forceinline__ void read_epilogue_inputs(float (&x)[N], const config::Params& p,
                                                     int first,
                                                     const long long (&bi)[config::kBatchDims],
                                                     int h, int i, int c) {
  if constexpr (J < Ins::size) {
    using U = typename detail::TypeAt<J, Ins>::type;
    const int slot = first + J;
    x[J] = to_float(
        reinterpret_cast<const U*>(p.epi.ptr[slot])[element_at(p.epi.s[slot], bi, h, i, c)]);
    read_epilogue_inputs<Ins, J + 1>(x, p, first, bi, h, i, c);
  }
}

/// The epilogue's outputs J.. from y[J..] at the element: output 0 at kOut, the others in the
/// slots before the inputs'.
template <class Outs, int J, int N>
__device__ __forceinline__ void write_epilogue_outputs(const float (&y)[N], const config::Params& p,
                                                       const long long (&bi)[config::kBatchDims],
                                                       int h, int i, int c) {
  if constexpr (J < Outs::size) {
    using U = typename detail::TypeAt<J, Outs>::type;
    if constexpr (J == 0) {
      reinterpret_cast<U*>(p.ptr[config::kOut])[element_at(p.s[config::kOut], bi, h, i, c)] =
          from_float<U>(y[0]);
    } else {
      reinterpret_cast<U*>(p.epi.ptr[J - 1])[element_at(p.epi.s[J - 1], bi, h, i, c)] =
          from_float<U>(y[J]);
    }
    write_epilogue_outputs<Outs, J + 1>(y, p, bi, h, i, c);
  }
}

/// The element (bi, h, i, c) of the call from its attention value `v`: Epi's inputs there,
/// Epi, its outputs there.
template <class Epi>
__device__ __forceinline__ void epilogue_element(const config::Params& p,
                                                 const long long (&bi)[config::kBatchDims], int h,
                                                 int i, int c, float v) {
  constexpr int NO = Epi::Outputs::size, NE = Epi::Inputs::size;
  static_assert(
      NO >= 1 && NO - 1 + NE <= config::kEpilogueSlots && Epi::scalars <= config::kEpilogueScalars,
      "the epilogue's tensors and scalars fit Params::epi (ops::FusionRoles limits)");
  float x[NE + 1], y[NO];
  read_epilogue_inputs<typename Epi::Inputs, 0>(x, p, NO - 1, bi, h, i, c);
  x[NE] = v;
  Epi::apply(x, p.epi.scalars, y);
  write_epilogue_outputs<typename Epi::Outputs, 0>(y, p, bi, h, i, c);
}

/// The epilogue over a thread's rows i0 and i0 + 8 of an mma fragment: at(j, e) is the
/// accumulator of row i0 + 8 (e / 2), column 8 j + 2 t + e % 2, divided here by the row's sum
/// (a quad's parts `l`; 0 for a row that saw no key); columns from D and rows from Sq are not
/// stored. Every lane of the warp calls it (the sums are reduced across the quad).
template <class Epi, int D, int DT, class At>
__device__ __forceinline__ void epilogue_rows(const config::Params& p,
                                              const long long (&bi)[config::kBatchDims], int h,
                                              int i0, const float (&l)[2], int t, At at) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const float inv = inverse_row_sum(l[hr]);
    const int i = i0 + 8 * hr;
    if (i >= p.sq) continue;
#pragma unroll
    for (int j = 0; j < DT; ++j) {
      const int c = 8 * j + 2 * t;
      if (c >= D) continue;
      epilogue_element<Epi>(p, bi, h, i, c, at(j, 2 * hr) * inv);
      epilogue_element<Epi>(p, bi, h, i, c + 1, at(j, 2 * hr + 1) * inv);
    }
  }
}

}  // namespace kiln::attention
