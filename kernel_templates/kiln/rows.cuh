#pragma once
// The row template: one block per row of the last axis. A fused elementwise prologue (Body)
// computes each element from the inputs; pass 1 folds the row into a statistic (Row::Stat)
// with a block reduction; pass 2, for ops that write the row (softmax, norms), computes
// Row::apply(x, params, weight, bias) and passes it through a fused elementwise epilogue (Epi,
// which reads it as x[Epi::Inputs::size]) to the outputs. Reductions write Epi of one value
// per row.
//
// Two strategies (Items): with Items > 0 each thread loads its Items groups of the row at once
// and keeps the prologue's values in registers for pass 2 (the row is read from memory once;
// Block * Items must cover the row; a Row with kFoldsCached folds the thread's values at once,
// and one with kRescalesCached transforms them for pass 2 to multiply by Row::scale); with
// Items == 0 threads stride over a row of any length (four groups at a time, each batch folded
// at once by a Row with kFoldsCached), keep the prologue's values of the row's first groups in
// the launch's dynamic shared memory (as many as it holds: the stash), and pass 2 reads those
// from there and recomputes the rest from memory (in L2 by then, if it fits).
//
// rows_split (sm_90 and later) splits each row between the Split blocks of a thread-block
// cluster: rows too long for one block's registers are held in several blocks' registers, and
// their statistics merge through distributed shared memory (row_reduce.cuh). Each block's slice
// of a norm's weight and bias is copied into its shared memory while pass 1 runs (Staged).
//
// Slots of the layout and of Args::p: Epi's outputs, Body's inputs, Extra (the norms' weight
// and bias, [C]), then Epi's inputs. Scalars: Body's, eps, then Epi's. The layout's last Dim
// is the row, in groups of V elements.

#include <kiln/elementwise.cuh>
#include <kiln/row_reduce.cuh>
#include <kiln/row_stats.cuh>

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

/// Group g of the iteration: its offsets into `off`, its inputs loaded and through the
/// prologue into `x`. (A function, not a lambda in run(): NVRTC's front end parses a lambda
/// of a template anew for each instantiation, ~7 ms of a row kernel's compile.)
template <class Body, class L, int V, int NO, class A, class Index, int K>
__device__ __forceinline__ void load_group(const A& args, Index g, Index (&off)[K], float (&x)[V]) {
  L::offsets(g, off);
  InputPacks<L, V, NO, typename Body::Inputs> raw;
  raw.load(args.p, off);
  prologue<Body>(raw, args.s, x);
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
      float wb[2] = {1.0f, 0.0f}, e[NP + 1];
      extra.values(i, wb);
      epi.values(i, e);
      e[NP] = apply(i, x[i], wb[0], wb[1]);
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
// start (plane e at e * kPlane), so that pass 2 reads them from shared memory instead of L2.
// On for rows_split kernels with Items whose extra operands are 16-byte contiguous groups and
// fit in 32 KiB.
template <class Extra, class L, int V, int Slot, int Block, int Items, int Split>
struct Staged {
  template <int E>
  using T = typename detail::TypeAt<E, Extra>::type;
  static constexpr unsigned kGroupBytes = 16;
  static constexpr unsigned kPlane = unsigned(Block) * unsigned(Items) * kGroupBytes;
  static constexpr unsigned kBytes = kPlane * unsigned(Extra::size);
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

  /// The block's slices (its first group at offsets `off`) copied in, counted on mbarrier `bar`.
  template <class Index, int K>
  __device__ __forceinline__ static void copy(unsigned char* dst, void* const* p,
                                              const Index (&off)[K], unsigned count, unsigned bar) {
#pragma unroll
    for (int e = 0; e < Extra::size; ++e)  // each element is kGroupBytes / V bytes (contiguous())
      stage_copy(
          dst + e * kPlane,
          static_cast<const unsigned char*>(p[Slot + e]) + off[Slot + e] * Index(kGroupBytes / V),
          count * kGroupBytes, bar);
  }
  /// Group j of the block's slice into `packs` (a Tail's extra).
  template <class Packs, class Index>
  __device__ __forceinline__ static void load(Packs& packs, const unsigned char* src, Index j) {
    void* q[Slot + Extra::size] = {};
    Index off[Slot + Extra::size] = {};
#pragma unroll
    for (int e = 0; e < Extra::size; ++e) {
      q[Slot + e] = const_cast<unsigned char*>(src) + e * kPlane;
      off[Slot + e] = j * Index(V);
    }
    packs.load(q, off);
  }
};

// One block's share of a row: the whole row, or with Split > 1 its part of a row split
// between the Split blocks of a cluster (each covers Block * Items groups in registers, or
// streams a Split-th of the row), whose statistics merge through distributed shared memory.
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block,
          int Items, int Split, class A>
__device__ __forceinline__ void run(const A& args, Index groups_per_row) {
  static_assert(Block % 32 == 0 && Block <= 1024,
                "a row block is whole warps, at most 1024 threads");
  static_assert(Items >= 0 && Items <= 16, "at most 16 groups per thread in registers");
  static_assert(Extra::size <= 2, "extra row inputs are weight and bias");
  static_assert(Split >= 1 && Split <= 8 && Split <= Block, "a row splits between 1 to 8 blocks");
  constexpr int NO = Epi::Outputs::size;
  constexpr int NI = Body::Inputs::size;
  constexpr int K = NO + NI + Extra::size + Epi::Inputs::size;
  using Ins = InputPacks<L, V, NO, typename Body::Inputs>;
  unsigned part = Split > 1 ? cluster_rank() : 0u;
  const Index span = Split == 1  ? groups_per_row
                     : Items > 0 ? Index(Block * Items)
                                 : (groups_per_row + Split - 1) / Split;
  const Index lo = Index(part) * span;
  const Index count = lo >= groups_per_row         ? Index(0)
                      : groups_per_row - lo < span ? groups_per_row - lo
                                                   : span;
  const Index first =
      Index(blockIdx.x / Split) * groups_per_row + lo;  // this block's group j is `first + j`
  const float eps = args.s[Body::scalars];
  const float* epi_scalars = args.s + Body::scalars + 1;
  const float n = float(groups_per_row) * float(V);
  using Stage = Staged<Extra, L, V, NO + NI, Block, Items, Split>;
  __shared__ alignas(128) unsigned char staged[Stage::kOn ? Stage::kBytes : 1];
  if constexpr (Split > 1) {
    const unsigned staged_bytes =
        Stage::kOn ? unsigned(count) * Stage::kGroupBytes * unsigned(Extra::size) : 0u;
    cluster_start<Row, Block, Split>(staged_bytes);
    if constexpr (Stage::kOn) {
      if (threadIdx.x == 0 && count > 0) {
        Index off[K];
        L::offsets(first, off);
        Stage::copy(staged, args.p, off, unsigned(count), cluster_bar<Row, Block, Split>());
      }
    }
  }
  // Pass 1: the statistic (and, with Items, the row's values in registers).
  typename Row::Local local = Row::local_init();
  float cached[Items > 0 ? Items : 1][V];
  if constexpr (Items > 0) {
    Ins raw[Items];
#pragma unroll
    for (int it = 0; it < Items; ++it) {  // every load issued before the first is used
      const Index j = Index(it) * Block + threadIdx.x;
      if (j < count) {
        Index off[K];
        L::offsets(first + j, off);
        raw[it].load(args.p, off);
      }
    }
    int loaded = 0;  // the thread's groups in this row: a prefix of `cached`
#pragma unroll
    for (int it = 0; it < Items; ++it)
      if (Index(it) * Block + threadIdx.x < count) {
        prologue<Body>(raw[it], args.s, cached[it]);
        loaded = it + 1;
      }
    if constexpr (Row::kFoldsCached) {
      local = Row::fold(cached, loaded);
    } else {
#pragma unroll
      for (int it = 0; it < Items; ++it)
        if (it < loaded) {
#pragma unroll
          for (int i = 0; i < V; ++i) Row::local_add(local, cached[it][i]);
        }
    }
  } else {
    // Four groups loaded before the first is used; each one's values stashed if they fit.
    const Stash<V> stash;
    constexpr int kBatch = 4;
    Index j = threadIdx.x;
    for (; j + Index(kBatch - 1) * Block < count; j += kBatch * Block) {
      Ins raw[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        Index off[K];
        L::offsets(first + j + Index(u) * Block, off);
        raw[u].load(args.p, off);
      }
      float x[kBatch][V];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        prologue<Body>(raw[u], args.s, x[u]);
        if (Row::kWritesRow && j + Index(u) * Block < stash.capacity)
          stash.put(j + Index(u) * Block, x[u]);
      }
      if constexpr (Row::kFoldsCached) {  // the batch folded at once (its values are not needed
                                          // after)
        local = Row::merge(local, Row::fold(x, kBatch));
      } else {
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
#pragma unroll
          for (int i = 0; i < V; ++i) Row::local_add(local, x[u][i]);
      }
    }
    for (; j < count; j += Block) {
      Index off[K];
      float x[V];
      load_group<Body, L, V, NO>(args, first + j, off, x);
      if (Row::kWritesRow && j < stash.capacity) stash.put(j, x);
#pragma unroll
      for (int i = 0; i < V; ++i) Row::local_add(local, x[i]);
    }
  }
  typename Row::Stat stat;
  if constexpr (Split > 1)
    stat = cluster_reduce<Row, Block, Split>(Row::to_stat(local));
  else
    stat = block_reduce<Row, Block>(Row::to_stat(local));

  if constexpr (!Row::kWritesRow) {
    static_assert(Epi::Inputs::size == 0, "a reduction's epilogue reads nothing but the row value");
    if (threadIdx.x == 0 && part == 0) {
      Index off[K];
      L::offsets(first, off);
      float x[1] = {Row::finish(stat, n)}, y[1][NO];
      Epi::apply(x, epi_scalars, y[0]);
      StoreOutputs<0, typename Epi::Outputs, 1>::run(args.p, off, y);
    }
  } else {
    const typename Row::Params params = Row::params(stat, n, eps);
    const auto apply = [&](int, float x, float w, float b) { return Row::apply(x, params, w, b); };
    if constexpr (Items > 0) {
      float scale = 1.0f;
      if constexpr (Row::kRescalesCached) scale = Row::scale(params, local);
      const auto apply_cached = [&](int i, float x, float w, float b) {
        if constexpr (Row::kRescalesCached)
          return x * scale;
        else
          return apply(i, x, w, b);
      };
#pragma unroll
      for (int it = 0; it < Items; ++it) {
        const Index j = Index(it) * Block + threadIdx.x;
        if (j < count) {
          Index off[K];
          L::offsets(first + j, off);
          if constexpr (Stage::kOn) {
            Tail<Epi, Extra, L, V, NO, NI> tail;
            Stage::load(tail.extra, staged, j);
            tail.epi.load(args.p, off);
            tail.store(args.p, off, cached[it], apply_cached, epi_scalars);
          } else {
            write_group<Epi, Extra, L, V, NO, NI>(args.p, off, cached[it], apply_cached,
                                                  epi_scalars);
          }
        }
      }
    } else {  // the stash, then the prologue recomputed (the row is in L2 by now, if it fits)
      const Stash<V> stash;
      // Four groups' loads issued before the first store; two when a group carries 16 values or
      // more (bf16 norms: x and weight, bias), which spilled at 1024 threads (64 registers).
      constexpr int kBatch = V * (1 + Extra::size) >= 16 ? 2 : 4;
      Index j = threadIdx.x;
      for (; j + Index(kBatch - 1) * Block < count; j += kBatch * Block) {
        Index off[kBatch][K];
        Ins raw[kBatch];
        Tail<Epi, Extra, L, V, NO, NI> tail[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          L::offsets(first + j + Index(u) * Block, off[u]);
          tail[u].load(args.p, off[u]);
          if (j + Index(u) * Block >= stash.capacity) raw[u].load(args.p, off[u]);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          float x[V];
          if (j + Index(u) * Block < stash.capacity)
            stash.get(j + Index(u) * Block, x);
          else
            prologue<Body>(raw[u], args.s, x);
          tail[u].store(args.p, off[u], x, apply, epi_scalars);
        }
      }
      for (; j < count; j += Block) {
        Index off[K];
        float x[V];
        if (j < stash.capacity) {
          L::offsets(first + j, off);
          stash.get(j, x);
        } else {
          load_group<Body, L, V, NO>(args, first + j, off, x);
        }
        write_group<Epi, Extra, L, V, NO, NI>(args.p, off, x, apply, epi_scalars);
      }
    }
  }
}

template <class Body, class Epi, class Extra>
using RowArgs = Args<Epi::Outputs::size + Body::Inputs::size + Extra::size + Epi::Inputs::size,
                     Body::scalars + 1 + Epi::scalars>;

}  // namespace row

/// One block per row.
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block,
          int Items>
__global__ void __launch_bounds__(Block)
    rows(const row::RowArgs<Body, Epi, Extra> args, Index groups_per_row) {
  row::run<Body, Row, Epi, Extra, L, V, Index, Block, Items, 1>(args, groups_per_row);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KILN_CLUSTER_DIMS(x) __cluster_dims__(x, 1, 1)
#else
#define KILN_CLUSTER_DIMS(x)
#endif

/// Split blocks per row, a cluster each (sm_90 and later; compiled for an earlier arch it
/// traps, and the engine never chooses it there).
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block,
          int Items, int Split>
__global__ void __launch_bounds__(Block,
                                  (row::Staged<Extra, L, V, Epi::Outputs::size + Body::Inputs::size,
                                               Block, Items, Split>::kMinBlocks))
    KILN_CLUSTER_DIMS(Split)
        rows_split(const row::RowArgs<Body, Epi, Extra> args, Index groups_per_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  row::run<Body, Row, Epi, Extra, L, V, Index, Block, Items, Split>(args, groups_per_row);
#else
  __trap();
#endif
}

}  // namespace kiln
