#pragma once
// Static iteration layouts. Layout<Dim<E, So, S0, S1, S2>...> lists the dims outermost first;
// each Dim carries its extent and the element stride of the output and of inputs 0..2 (0 for a
// broadcast or absent operand). Extents and strides are compile-time constants, so unraveling
// an index is multiplies and shifts. The outermost extent is never read (the launch bounds the
// iterations), and specialization writes 0 there: one kernel for every batch size.

namespace kiln {

template <long long Extent, long long... Strides>
struct Dim {
  static constexpr long long extent = Extent;
  template <int K>
  __host__ __device__ static constexpr long long stride() {
    constexpr long long s[] = {Strides...};
    return s[K];
  }
  __host__ __device__ static constexpr long long stride_of(int k) {
    constexpr long long s[] = {Strides...};
    return s[k];
  }
};

namespace detail {

template <class Index, bool Outermost, class... Dims>
struct Unravel {
  template <int K>
  __device__ static void run(Index&, Index (&)[K]) {}
};

template <class Index, bool Outermost, long long E, long long... S, class... Rest>
struct Unravel<Index, Outermost, Dim<E, S...>, Rest...> {
  template <int K>
  __device__ __forceinline__ static void run(Index& g, Index (&off)[K]) {
    static_assert(sizeof...(S) == K, "a Dim needs one stride per operand");
    Unravel<Index, false, Rest...>::run(g, off);  // inner dims first
    Index c = g;
    if constexpr (!Outermost) {  // the outermost extent may be 0: a dynamic batch
      c = g % Index(E);
      g /= Index(E);
    }
    const long long s[] = {S...};
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += c * Index(s[k]);
  }
};

template <class First, class... Rest>
struct Last {
  using type = typename Last<Rest...>::type;
};
template <class First>
struct Last<First> {
  using type = First;
};

}  // namespace detail

template <class... Dims>
struct Layout {
  static_assert(sizeof...(Dims) >= 1, "a layout has at least one dim");
  using Inner = typename detail::Last<Dims...>::type;

  /// Element offsets of iteration index g in each operand.
  template <class Index, int K>
  __device__ __forceinline__ static void offsets(Index g, Index (&off)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
    detail::Unravel<Index, true, Dims...>::run(g, off);
  }
};

/// The layout of rows whose length is known only at run time (a dynamic dim): Inner is the
/// row's Dim (its extent unused, its strides static: they say which operands run along the
/// row and which are broadcast), and the D dims outside it have their extents and strides in
/// a kernel parameter (row::Geometry), so one kernel serves every row length.
template <class InnerDim, int D>
struct RowsAt {
  static_assert(D >= 1, "rows have at least one dim outside the row");
  using Inner = InnerDim;
  static constexpr int dims = D;
};

}  // namespace kiln
