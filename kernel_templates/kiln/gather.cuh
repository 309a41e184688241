#pragma once
// Reads at indices: a gather view (ops/gather.cpp: gather, index_select, embedding) read in
// place by the kernel that consumes it. Its slot's strides in the layout step through its
// operand over the result's shape with 0 along the indexed axis; the index tensor has a slot
// of its own after every slot the templates know (its strides over the result's shape), and
// the element is at offset + index * Stride. An index outside [0, Extent) reads entry 0 (never
// outside the operand) and reports itself in the launch's status word (the last slot): its
// index tensor's slot in the low 16 bits, the index above them.
// The first report stands (compare-and-swap from 0); the engine reads the word after the run
// and raises an error naming the op.

#include <kiln/dtype.cuh>
#include <kiln/integer.cuh>
#include <kiln/layout.cuh>
#include <kiln/vec.cuh>

namespace kiln {

/// Slot Slot reads at the index of type IdxT that slot IdxSlot holds, along an axis of Extent
/// entries Stride elements apart.
template <int Slot, int IdxSlot, class IdxT, long long Stride, long long Extent>
struct Gather {
  static constexpr int slot = Slot;
  static constexpr int out_slot = -1;
  static constexpr int idx_slot = IdxSlot;
  using Idx = IdxT;
  static constexpr long long stride = Stride;
  static constexpr long long extent = Extent;
};

/// One axis of a Remap: the result's coordinate along it is (the coordinate slot's offset /
/// Radix) % Span (the coordinate slot steps by Radix along this axis; the next axis's radix is
/// Radix * Span); x's entry is (coordinate - Lo) / Scale (floor), Stride elements apart, of
/// XExtent entries.
template <long long Radix, long long Span, long long Lo, long long Scale, long long Stride,
          long long XExtent>
struct RemapAxis {
  /// Adds the entry's offset to `at` for coordinate offset `c`; false where it lies outside x.
  __device__ __forceinline__ static bool add(long long c, long long& at) {
    const long long i = (c / Radix) % Span - Lo;
    if (i < 0) return false;
    const long long e = Scale == 1 ? i : i / Scale;
    at += e * Stride;
    return e < XExtent;
  }
};

/// Slot Slot reads x at positions computed from the coordinates (a remap view: pad,
/// upsample_nearest), axis by axis (RemapAxis), from the offset of coordinate slot CoordSlot
/// (which holds no memory); FillBits (a double's bits) where a position lies outside x.
template <int Slot, int CoordSlot, unsigned long long FillBits, class... Axes>
struct Remap {
  static constexpr int slot = Slot;
  static constexpr int out_slot = -1;
  static constexpr int idx_slot = CoordSlot;
  static constexpr bool remap = true;
  using Idx = int;
  static constexpr long long stride = 0;
  static constexpr long long extent = 1;
  /// x's offset (from the slot's) for coordinate offset `c`; false where it reads the fill.
  __device__ __forceinline__ static bool at(long long c, long long& off) {
    off = 0;
    return (Axes::add(c, off) && ...);
  }
  template <class T>
  __device__ __forceinline__ static T fill() {
    const double v = __longlong_as_double(static_cast<long long>(FillBits));
    if constexpr (Same<typename Compute<T>::type, float>::value)
      return from_float<T>(float(v));
    else
      return T(static_cast<long long>(v));
  }
};

/// Whether gather G reads at computed positions (a Remap).
template <class G, class = void>
struct IsRemap {
  static constexpr bool value = false;
};
template <class G>
struct IsRemap<G, decltype(void(G::remap))> {
  static constexpr bool value = G::remap;
};

/// Output slot Slot is written at an offset moved Stride elements per unit of the index of type
/// IdxT that slot IdxSlot holds (a slice_update's start), which must lie in [0, Limit].
template <int Slot, int IdxSlot, class IdxT, long long Stride, long long Limit>
struct Scatter {
  static constexpr int slot = -1;  // no input slot reads through it
  static constexpr int out_slot = Slot;
  static constexpr int idx_slot = IdxSlot;
  using Idx = IdxT;
  static constexpr long long stride = Stride;
  static constexpr long long limit = Limit;
};

/// Layout L whose slots listed in Gathers read at indices (or, for a Scatter, are written at
/// them), from Indices index tensors' slots (a gather view read in two slots reads one index
/// tensor); StatusSlot is the last slot.
template <class L, int StatusSlot, int Indices, class... Gathers>
struct Gathering : L {
  static constexpr int status_slot = StatusSlot;
};

/// Slots a layout has past those of the template's operands: the index tensors and the status
/// word of a Gathering; none otherwise.
template <class L>
struct ExtraSlots {
  static constexpr int value = 0;
};
template <class L, int StatusSlot, int Indices, class... G>
struct ExtraSlots<Gathering<L, StatusSlot, Indices, G...>> {
  static constexpr int value = Indices + 1;
};
template <class L>
constexpr int kExtraSlots = ExtraSlots<L>::value;

namespace detail {

template <bool B, class T, class F>
struct Pick {
  using type = T;
};
template <class T, class F>
struct Pick<false, T, F> {
  using type = F;
};

/// The Gather of slot Slot among G; `found` false if none.
template <int Slot, class... G>
struct FindGather {
  static constexpr bool found = false;
  using type = void;
};
template <int Slot, class H, class... R>
struct FindGather<Slot, H, R...> {
  using Next = FindGather<Slot, R...>;
  static constexpr bool here = H::slot == Slot;
  static constexpr bool found = here || Next::found;
  using type = typename Pick<here, H, typename Next::type>::type;
};

/// The Scatter of output slot Slot among G; `found` false if none.
template <int Slot, class... G>
struct FindScatter {
  static constexpr bool found = false;
  using type = void;
};
template <int Slot, class H, class... R>
struct FindScatter<Slot, H, R...> {
  using Next = FindScatter<Slot, R...>;
  static constexpr bool here = H::out_slot == Slot;
  static constexpr bool found = here || Next::found;
  using type = typename Pick<here, H, typename Next::type>::type;
};

}  // namespace detail

/// Where output slot J of layout L is written for a group at `off`: off[J], or for a Scatter
/// moved by its index; an index outside [0, Limit] reports itself and clears `ok` (the group is
/// not stored).
template <int J, class L>
struct ScatterAt {
  template <class Index, int K>
  __device__ __forceinline__ static Index at(void* const*, const Index (&off)[K], bool&) {
    return off[J];
  }
};
template <int J, class L, int StatusSlot, int Indices, class... G>
struct ScatterAt<J, Gathering<L, StatusSlot, Indices, G...>> {
  using Find = detail::FindScatter<J, G...>;
  template <class Index, int K>
  __device__ __forceinline__ static Index at(void* const* p, const Index (&off)[K], bool& ok) {
    if constexpr (!Find::found) {
      return off[J];
    } else {
      using S = typename Find::type;
      const long long i = static_cast<long long>(static_cast<const typename S::Idx*>(
          p[S::idx_slot])[static_cast<long long>(off[S::idx_slot])]);
      if (i < 0 || i > S::limit) {
        const unsigned long long code = (static_cast<unsigned long long>(i) << 16) |
                                        static_cast<unsigned long long>(S::idx_slot);
        atomicCAS(static_cast<unsigned long long*>(p[StatusSlot]), 0ull, code);
        ok = false;
        return off[J];
      }
      return off[J] + Index(i * S::stride);
    }
  }
};

/// How slot Slot of layout L is read: `on` when it gathers.
template <class L, int Slot>
struct GatherAt {
  static constexpr bool on = false;
};
template <class L, int StatusSlot, int Indices, class... G, int Slot>
struct GatherAt<Gathering<L, StatusSlot, Indices, G...>, Slot> {
  using Find = detail::FindGather<Slot, G...>;
  static constexpr bool on = Find::found;
  using G0 = typename Find::type;
  static constexpr int status = StatusSlot;
  using Inner = typename L::Inner;
};

/// A gathering slot's operand (At: its GatherAt): V elements at the V iterations' indices (one
/// index for the pack where the index is broadcast along the inner dim, one per element else),
/// or one element where both the operand and its index are broadcast along the inner dim.
template <class T, int V, class At, int Slot>
struct GatheredOperand {
  using P = typename At::G0;
  using Idx = typename P::Idx;
  static constexpr long long kInner = At::Inner::template stride<Slot>() / V;
  static constexpr long long kIdxInner = At::Inner::template stride<P::idx_slot>() / V;
  static constexpr bool kPacked = V > 1 && (kInner != 0 || kIdxInner != 0);
  using Raw = Pack<T, kPacked ? V : 1>;

  // The index at `at`, checked: entry 0 and a report where it is outside the axis.
  __device__ __forceinline__ static long long checked(void* const* p, long long at) {
    const long long i = static_cast<long long>(static_cast<const Idx*>(p[P::idx_slot])[at]);
    if (i >= 0 && i < P::extent) return i;
    const unsigned long long code =
        (static_cast<unsigned long long>(i) << 16) | static_cast<unsigned long long>(P::idx_slot);
    atomicCAS(static_cast<unsigned long long*>(p[At::status]), 0ull, code);
    return 0;
  }

  template <class Index, int K>
  __device__ __forceinline__ static Raw load(void* const* p, const Index (&off)[K]) {
    const T* x = static_cast<const T*>(p[Slot]);
    Raw r;
    if constexpr (IsRemap<P>::value) {
      const long long base = static_cast<long long>(off[Slot]);
      const long long c = static_cast<long long>(off[P::idx_slot]);
      long long at = 0;
      if constexpr (kPacked && kIdxInner == 0) {  // one position for the pack
        if (P::at(c, at)) {
          r = load_pack<T, V>(x + base + at);
        } else {
#pragma unroll
          for (int i = 0; i < V; ++i) r.v[i] = P::template fill<T>();
        }
      } else {
#pragma unroll
        for (int e = 0; e < (kPacked ? V : 1); ++e)
          r.v[e] = P::at(c + e * kIdxInner, at) ? x[base + e * kInner + at]
                                                 : P::template fill<T>();
      }
    } else if constexpr (P::extent == 0) {  // nothing to read: every index is outside
      for (int i = 0; i < (kPacked ? V : 1); ++i) {
        checked(p, static_cast<long long>(off[P::idx_slot]) + i * kIdxInner);
        r.v[i] = T();
      }
    } else if constexpr (kPacked && kIdxInner == 0) {  // one row of V elements: one pack
      const long long i = checked(p, static_cast<long long>(off[P::idx_slot]));
      r = load_pack<T, V>(x + static_cast<long long>(off[Slot]) + i * P::stride);
    } else {
#pragma unroll
      for (int e = 0; e < (kPacked ? V : 1); ++e) {
        const long long i = checked(p, static_cast<long long>(off[P::idx_slot]) + e * kIdxInner);
        r.v[e] = x[static_cast<long long>(off[Slot]) + e * kInner + i * P::stride];
      }
    }
    return r;
  }
  __device__ __forceinline__ static float value(const Raw& r, int i) {
    return to_float(r.v[kPacked ? i : 0]);
  }
  __device__ __forceinline__ static typename Compute<T>::type compute(const Raw& r, int i) {
    return to_compute(r.v[kPacked ? i : 0]);
  }
};

}  // namespace kiln
