#pragma once
// The row template's parts (rows.cuh): the streaming path's stash in dynamic shared memory,
// where a block's groups are (RowCursor: a static layout, or rows placed at run time), the
// prologue of one group, what pass 2 reads and stores for a group (Tail), and a split
// row's weight and bias staged in shared memory. Slots are rows.cuh's.

#include <kiln/elementwise.cuh>
#include <kiln/row_config.cuh>
#include <kiln/row_reduce.cuh>

namespace kiln {
namespace row {

/// The launch's dynamic shared memory, in bytes.
__device__ __forceinline__ unsigned dynamic_smem_bytes() {
  unsigned n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}

/// The streaming path's stash: V planes of `capacity` floats (float4 planes when V is a
/// multiple of 4), so that consecutive threads touch consecutive words.
template <int V>
struct Stash {
  float* base;
  unsigned capacity;  ///< groups it holds
  __device__ __forceinline__ Stash() {
    extern __shared__ float4 kiln_dynamic_smem[];
    base = reinterpret_cast<float*>(kiln_dynamic_smem);
    capacity = dynamic_smem_bytes() / (V * 4) / 4 * 4;
  }
  template <class Index>
  __device__ __forceinline__ void put(Index j, const float (&x)[V]) const {
    if constexpr (V % 4 == 0) {
#pragma unroll
      for (int q = 0; q < V / 4; ++q)
        reinterpret_cast<float4*>(base)[q * capacity + j] =
            make_float4(x[4 * q], x[4 * q + 1], x[4 * q + 2], x[4 * q + 3]);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) base[i * capacity + j] = x[i];
    }
  }
  template <class Index>
  __device__ __forceinline__ void get(Index j, float (&x)[V]) const {
    if constexpr (V % 4 == 0) {
#pragma unroll
      for (int q = 0; q < V / 4; ++q) {
        const float4 v = reinterpret_cast<const float4*>(base)[q * capacity + j];
        x[4 * q] = v.x, x[4 * q + 1] = v.y, x[4 * q + 2] = v.z, x[4 * q + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) x[i] = base[i * capacity + j];
    }
  }
};

/// The kernel parameter of a static layout's rows: none.
struct NoGeometry {};

/// The kernel parameter of a RowsAt layout: the extents of its D dims outside the row (the
/// outermost unused: the grid bounds it) and each slot's element stride along them.
template <int D, int K>
struct Geometry {
  long long extent[D];
  long long stride[D][K];
};

/// Where a block's groups of its row are: group j at `offsets(j)`. A static layout unravels
/// the group's index in the whole iteration; its row's first group is row * groups_per_row + lo.
template <class L, class Index, int K>
struct RowCursor {
  static constexpr int kSlots = K;
  Index first;
  __device__ __forceinline__ RowCursor(Index row, Index groups_per_row, Index lo, NoGeometry)
      : first(row * groups_per_row + lo) {}
  __device__ __forceinline__ void offsets(Index j, Index (&off)[K]) const {
    L::offsets(first + j, off);
  }
  /// Group j + step (a batch's: first + j + step, as the static layout's unrolled loads
  /// are ordered).
  __device__ __forceinline__ void offsets(Index j, Index step, Index (&off)[K]) const {
    L::offsets(first + j + step, off);
  }
};

/// A RowsAt layout: the row's base offsets from the geometry, once; then group j is j inner
/// strides on.
template <class InnerDim, int D, class Index, int K>
struct RowCursor<RowsAt<InnerDim, D>, Index, K> {
  static constexpr int kSlots = K;
  Index base[K];
  __device__ __forceinline__ RowCursor(Index row, Index, Index lo, const Geometry<D, K>& g) {
#pragma unroll
    for (int k = 0; k < K; ++k) base[k] = lo * Index(InnerDim::stride_of(k));
#pragma unroll
    for (int d = D - 1; d >= 0; --d) {
      Index c = row;
      if (d > 0) {
        c = row % Index(g.extent[d]);
        row /= Index(g.extent[d]);
      }
#pragma unroll
      for (int k = 0; k < K; ++k) base[k] += c * Index(g.stride[d][k]);
    }
  }
  __device__ __forceinline__ void offsets(Index j, Index (&off)[K]) const {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = base[k] + j * Index(InnerDim::stride_of(k));
  }
  __device__ __forceinline__ void offsets(Index j, Index step, Index (&off)[K]) const {
    offsets(j + step, off);
  }
};

/// The prologue (Body) of one group's V elements, its inputs already loaded.
template <class Body, int V, class Ins>
__device__ __forceinline__ void prologue(const Ins& raw, const float* scalars, float (&x)[V]) {
#pragma unroll
  for (int i = 0; i < V; ++i) {
    float in[Body::Inputs::size > 0 ? Body::Inputs::size : 1], y[1];
    raw.values(i, in);
    Body::apply(in, scalars, y);
    x[i] = y[0];
  }
}

/// Group j of the block's share of the row (`at`): its offsets into `off`, its inputs loaded
/// and through the prologue into `x`. (A function, not a lambda in run(): NVRTC's front end
/// parses a lambda of a template anew for each instantiation, ~7 ms of a row kernel's compile.)
template <class Body, class L, int V, int NO, class A, class At, class Index, int K>
__device__ __forceinline__ void load_group(const A& args, const At& at, Index j, Index (&off)[K],
                                           float (&x)[V]) {
  at.offsets(j, off);
  InputPacks<L, V, NO, typename Body::Inputs> raw;
  raw.load(args.p, off);
  prologue<Body>(raw, args.s, x);
}

/// How many of a thread's Items groups in registers lie in its block's `count` groups of the
/// row (group `it` is at it * block + t, t the thread in its row): a prefix of Items.
template <int Items, class Index>
__device__ __forceinline__ int groups_held(Index count, unsigned block, unsigned t) {
  const unsigned c = unsigned(count);  // count <= block * Items
  const int n = t < c ? int((c - t - 1) / block) + 1 : 0;
  return n < Items ? n : Items;
}

/// Pass 1 of a thread's `held` groups in registers (groups_held): loaded, every load issued
/// before the first is used, and through the prologue into `cached`. No load is predicated: a
/// group past the thread's share loads its last one again, which the prologue computes and the
/// fold ignores. Predicated (j < count each) over a block known only at run time, ptxas keeps
/// the tests in a register and issues only some of the loads before the first is used.
template <class Body, class L, int V, int NO, class Index, int Items, class A, class At>
__device__ __forceinline__ void load_held(const A& args, const At& at, int held, unsigned block,
                                          unsigned t, float (&cached)[Items][V]) {
  if (held == 0) return;
  InputPacks<L, V, NO, typename Body::Inputs> raw[Items];
#pragma unroll
  for (int it = 0; it < Items; ++it) {
    Index off[At::kSlots];
    at.offsets(Index(it < held ? it : held - 1) * Index(block) + t, off);
    raw[it].load(args.p, off);
  }
#pragma unroll
  for (int it = 0; it < Items; ++it) prologue<Body>(raw[it], args.s, cached[it]);
}

// What pass 2 reads for one group besides the row's values: the weight and bias (Extra) and
// the epilogue's inputs; store() computes the row op's value apply(i, x[i], weight[i],
// bias[i]) and the epilogue, and stores the outputs. Loading apart from storing lets a thread
// issue the loads of several groups before the first store.
template <class Epi, class Extra, class L, int V, int NO, int NI>
struct Tail {
  InputPacks<L, V, NO + NI, Extra> extra;
  InputPacks<L, V, NO + NI + Extra::size, typename Epi::Inputs> epi;

  template <class Index, int K>
  __device__ __forceinline__ void load(void* const* p, const Index (&off)[K]) {
    extra.load(p, off);
    epi.load(p, off);
  }
  template <class Index, int K, class Apply>
  __device__ __forceinline__ void store(void* const* p, const Index (&off)[K], const float (&x)[V],
                                        const Apply& apply, const float* epi_scalars) const {
    constexpr int NP = Epi::Inputs::size;
    float y[V][NO];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float wb[2] = {1.0f, 0.0f}, e[NP + 2];
      extra.values(i, wb);
      epi.values(i, e);
      e[NP] = apply(i, x[i], wb[0], wb[1]);
      e[NP + 1] = x[i];  // the prologue's value (Ref::Kind::prologue), for a row handing it on
      Epi::apply(e, epi_scalars, y[i]);
    }
    StoreOutputs<0, typename Epi::Outputs, V>::run(p, off, y);
  }
};

// Pass 2 for one group at offsets `off` whose row values are `x`.
template <class Epi, class Extra, class L, int V, int NO, int NI, class Index, int K, class Apply>
__device__ __forceinline__ void write_group(void* const* p, const Index (&off)[K],
                                            const float (&x)[V], const Apply& apply,
                                            const float* epi_scalars) {
  Tail<Epi, Extra, L, V, NO, NI> tail;
  tail.load(p, off);
  tail.store(p, off, x, apply, epi_scalars);
}

// A split row's weight and bias (Extra, [C]) staged in shared memory: the block's slice of each,
// its `count` groups from the block's first, copied in by the Tensor Memory Accelerator at the
// start (plane e at e * plane), so that pass 2 reads them from shared memory instead of L2.
// On for rows_split kernels with Items whose extra operands are 16-byte contiguous groups and
// fit in 32 KiB. With RuntimeBlock the planes are as long as the launch's block needs, in the
// launch's dynamic shared memory (row_config.cuh: rows.cpp gives it, kStagedAlign more), from that boundary
// (the TMA's copies into a 16-byte aligned one ran 1-4 % slower), so that a short block of a
// bucket kernel does not hold the longest one's and fit fewer blocks a multiprocessor.
template <class Extra, class L, int V, int Slot, int Block, int Items, int Split,
          bool RuntimeBlock = false>
struct Staged {
  template <int E>
  using T = typename detail::TypeAt<E, Extra>::type;
  static constexpr unsigned kGroupBytes = config::kStagedGroupBytes;
  static constexpr unsigned kBytes = unsigned(Block) * unsigned(Items) * kGroupBytes * Extra::size;
  template <int E = 0>
  __host__ __device__ static constexpr bool contiguous() {
    if constexpr (E == Extra::size)
      return true;
    else
      return sizeof(T<E>) * V == kGroupBytes && L::Inner::template stride<Slot + E>() == V &&
             contiguous<E + 1>();
  }
  static constexpr bool kOn = Split > 1 && Items > 0 && Extra::size > 0 && kBytes <= 32768 &&
                              contiguous();
  // Staged, ptxas hoists every group's shared loads of pass 2 and grows from 48 registers to 64
  // (4 blocks of 256 a multiprocessor instead of 5, and slower: bench/NOTES.md); the
  // kernel asks for the blocks of the 40 warps that 48 registers hold (0: no minimum).
  static constexpr int kMinBlocks = kOn ? 40 / (Block / 32) : 0;

  unsigned char* base;
  unsigned plane;  ///< bytes of one operand's slice: Items groups for each thread of the block

  __device__ __forceinline__ explicit Staged(unsigned block)
      : base(buffer()), plane(block * unsigned(Items) * kGroupBytes) {
    if constexpr (kOn && RuntimeBlock) {
      if (dynamic_smem_bytes() < plane * unsigned(Extra::size) + config::kStagedAlign)
        __trap();  // launched without it
    }
  }
  __device__ __forceinline__ static unsigned char* buffer() {
    if constexpr (RuntimeBlock) {
      extern __shared__ float4 kiln_dynamic_smem[];
      return reinterpret_cast<unsigned char*>(
          (reinterpret_cast<unsigned long long>(kiln_dynamic_smem) + (config::kStagedAlign - 1)) &
          ~(config::kStagedAlign - 1ull));
    } else {
      __shared__ alignas(config::kStagedAlign) unsigned char fixed[kOn ? kBytes : 1];
      return fixed;
    }
  }

  /// The block's slices (its first group at offsets `off`) copied in, counted on mbarrier `bar`.
  template <class Index, int K>
  __device__ __forceinline__ void copy(void* const* p, const Index (&off)[K], unsigned count,
                                       unsigned bar) const {
#pragma unroll
    for (int e = 0; e < Extra::size; ++e)  // each element is kGroupBytes / V bytes (contiguous())
      stage_copy(
          base + e * plane,
          static_cast<const unsigned char*>(p[Slot + e]) + off[Slot + e] * Index(kGroupBytes / V),
          count * kGroupBytes, bar);
  }
  /// Group j of the block's slice into `packs` (a Tail's extra).
  template <class Packs, class Index>
  __device__ __forceinline__ void load(Packs& packs, Index j) const {
    void* q[Slot + Extra::size] = {};
    Index off[Slot + Extra::size] = {};
#pragma unroll
    for (int e = 0; e < Extra::size; ++e) {
      q[Slot + e] = base + e * plane;
      off[Slot + e] = j * Index(V);
    }
    packs.load(q, off);
  }
};

}  // namespace row
}  // namespace kiln
