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
// rows_at and rows_split_at serve rows whose length is known only at run time (a dynamic dim):
// their layout is a RowsAt (where each row starts comes in a row::Geometry parameter), and with
// Items > 0 a block runs as many threads as the launch gives, up to Block, so that one kernel
// serves a bucket of lengths (engine/families/rows/row_buckets.hpp).
//
// Slots of the layout and of Args::p: Epi's outputs, Body's inputs, Extra (the norms' weight
// and bias, [C]), then Epi's inputs. Scalars: Body's, eps, then Epi's. The layout's last Dim
// is the row, in groups of V elements.

#include <kiln/elementwise.cuh>
#include <kiln/row_parts.cuh>
#include <kiln/row_reduce.cuh>
#include <kiln/row_stats.cuh>

namespace kiln {
namespace row {

// One block's share of a row: the whole row, or with Split > 1 its part of a row split
// between the Split blocks of a cluster (each covers Block * Items groups in registers, or
// streams a Split-th of the row), whose statistics merge through distributed shared memory.
// With RuntimeBlock the block is launched with up to Block threads (the kernel serves rows of
// every length of a bucket), else with Block; with RuntimeSplit the launch's clusters are of 1
// to Split blocks, else of Split. G: the layout's kernel parameter (RowCursor).
// One function over every strategy (registers, stash, cluster split), ~180 lines, on purpose:
// split into per-strategy functions, ptxas gave layer_norm f32 over rows of 65536 70 registers
// instead of 63 (one block a multiprocessor instead of two) and the kernel ran 30 % slower
// (244.7 us against 187.6-188.6 on an H100; bench/NOTES.md, "A split of row::run").
// With Pack > 1 a block holds Pack rows, a warp each (rows_packed): Block is 32, the threads
// of one row, and a row's statistic merges in its warp alone.
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block,
          int Items, int Split, bool RuntimeBlock, bool RuntimeSplit, int Pack = 1, class A,
          class G>
__device__ __forceinline__ void run(const A& args, Index groups_per_row, const G& geometry) {
  static_assert(Block % 32 == 0 && Block <= 1024,
                "a row block is whole warps, at most 1024 threads");
  static_assert(Items >= 0 && Items <= 16, "at most 16 groups per thread in registers");
  static_assert(Extra::size <= 2, "extra row inputs are weight and bias");
  static_assert(Split >= 1 && Split <= 8 && Split <= Block, "a row splits between 1 to 8 blocks");
  static_assert(Pack == 1 || (Block == 32 && Items > 0 && Split == 1 && !RuntimeBlock),
                "packed rows are a warp each, in registers");
  constexpr int NO = Epi::Outputs::size;
  constexpr int NI = Body::Inputs::size;
  constexpr int K = NO + NI + Extra::size + Epi::Inputs::size + kExtraSlots<L>;
  using Ins = InputPacks<L, V, NO, typename Body::Inputs>;
  const unsigned block = RuntimeBlock ? blockDim.x : unsigned(Block), warps = block / 32;
  const unsigned split = RuntimeSplit ? cluster_blocks() : unsigned(Split);
  // A norm's weight and bias staged (Staged) need the cluster's mbarrier, so a kernel that
  // stages takes the cluster path whatever its split (row_buckets launches its most blocks);
  // a runtime split of 1 otherwise merges in the block alone.
  using Stage = Staged<Extra, L, V, NO + NI, Block, Items, Split, RuntimeBlock>;
  const bool clustered = !RuntimeSplit || Stage::kOn || split > 1;  // with Split > 1
  unsigned part = Split > 1 ? cluster_rank() : 0u;
  const Index span = Split == 1  ? groups_per_row
                     : Items > 0 ? Index(block) * Index(Items)
                                 : (groups_per_row + split - 1) / split;
  const Index lo = Index(part) * span;
  const Index count = lo >= groups_per_row         ? Index(0)
                      : groups_per_row - lo < span ? groups_per_row - lo
                                                   : span;
  const unsigned tid = Pack > 1 ? threadIdx.x % 32u : threadIdx.x;  // the thread in its row
  const Index row = Pack > 1 ? Index(blockIdx.x) * Index(Pack) + Index(threadIdx.x / 32u)
                             : Index(blockIdx.x / split);
  const RowCursor<L, Index, K> at(row, groups_per_row, lo, geometry);
  const float eps = args.s[Body::scalars];
  const float* epi_scalars = args.s + Body::scalars + 1;
  const float n = float(groups_per_row) * float(V);
  const Stage stage(block);
  if constexpr (Split > 1) {
    const unsigned staged_bytes =
        Stage::kOn ? unsigned(count) * Stage::kGroupBytes * unsigned(Extra::size) : 0u;
    if (clustered) cluster_start<Row, Block, Split>(staged_bytes, warps, split);
    if constexpr (Stage::kOn) {
      if (threadIdx.x == 0 && count > 0) {
        Index off[K];
        at.offsets(Index(0), off);
        stage.copy(args.p, off, unsigned(count), cluster_bar<Row, Block, Split>());
      }
    }
  }
  // Pass 1: the statistic (and, with Items, the row's values in registers).
  typename Row::Local local = Row::local_init();
  float cached[Items > 0 ? Items : 1][V];
  const int loaded = Items > 0 ? groups_held<Items>(count, block, tid) : 0;  // a prefix of cached
  if constexpr (Items > 0) {
    load_held<Body, L, V, NO, Index>(args, at, loaded, block, tid, cached);
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
    Index j = tid;
    for (; j + Index(kBatch - 1) * Index(block) < count; j += Index(kBatch) * Index(block)) {
      Ins raw[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        Index off[K];
        at.offsets(j, Index(u) * Index(block), off);
        raw[u].load(args.p, off);
      }
      float x[kBatch][V];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        prologue<Body>(raw[u], args.s, x[u]);
        if (Row::kWritesRow && j + Index(u) * Index(block) < stash.capacity)
          stash.put(j + Index(u) * Index(block), x[u]);
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
    for (; j < count; j += Index(block)) {
      Index off[K];
      float x[V];
      load_group<Body, L, V, NO>(args, at, j, off, x);
      if (Row::kWritesRow && j < stash.capacity) stash.put(j, x);
#pragma unroll
      for (int i = 0; i < V; ++i) Row::local_add(local, x[i]);
    }
  }
  typename Row::Stat stat;
  if constexpr (Split > 1)
    stat = clustered ? cluster_reduce<Row, Block, Split>(Row::to_stat(local), warps, split)
                     : block_reduce<Row, Block>(Row::to_stat(local), warps);
  else
    stat = block_reduce<Row, Block>(Row::to_stat(local), warps);

  if constexpr (!Row::kWritesRow) {
    static_assert(Epi::Inputs::size == 0, "a reduction's epilogue reads nothing but the row value");
    if (tid == 0 && part == 0) {
      Index off[K];
      at.offsets(Index(0), off);
      float x[1] = {Row::finish(stat, n, eps)}, y[1][NO];
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
        const Index j = Index(it) * Index(block) + tid;
        if (it < loaded) {
          Index off[K];
          at.offsets(j, off);
          if constexpr (Stage::kOn) {
            Tail<Epi, Extra, L, V, NO, NI> tail;
            stage.load(tail.extra, j);
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
      Index j = tid;
      for (; j + Index(kBatch - 1) * Index(block) < count; j += Index(kBatch) * Index(block)) {
        Index off[kBatch][K];
        Ins raw[kBatch];
        Tail<Epi, Extra, L, V, NO, NI> tail[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          at.offsets(j, Index(u) * Index(block), off[u]);
          tail[u].load(args.p, off[u]);
          if (j + Index(u) * Index(block) >= stash.capacity) raw[u].load(args.p, off[u]);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          float x[V];
          if (j + Index(u) * Index(block) < stash.capacity)
            stash.get(j + Index(u) * Index(block), x);
          else
            prologue<Body>(raw[u], args.s, x);
          tail[u].store(args.p, off[u], x, apply, epi_scalars);
        }
      }
      for (; j < count; j += Index(block)) {
        Index off[K];
        float x[V];
        if (j < stash.capacity) {
          at.offsets(j, off);
          stash.get(j, x);
        } else {
          load_group<Body, L, V, NO>(args, at, j, off, x);
        }
        write_group<Epi, Extra, L, V, NO, NI>(args.p, off, x, apply, epi_scalars);
      }
    }
  }
}

template <class Body, class Epi, class Extra>
constexpr int kSlots = Epi::Outputs::size + Body::Inputs::size + Extra::size + Epi::Inputs::size;
template <class Body, class Epi, class Extra, class L>
using RowArgs =
    Args<kSlots<Body, Epi, Extra> + kExtraSlots<L>, Body::scalars + 1 + Epi::scalars>;
template <class Body, class Epi, class Extra, class L>
using RowGeometry = Geometry<L::dims, kSlots<Body, Epi, Extra>>;

}  // namespace row

/// One block per row.
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block,
          int Items>
__global__ void __launch_bounds__(Block)
    rows(const row::RowArgs<Body, Epi, Extra, L> args, Index groups_per_row) {
  row::run<Body, Row, Epi, Extra, L, V, Index, Block, Items, 1, false, false>(args, groups_per_row,
                                                                              row::NoGeometry{});
}

/// Pack rows per block, a warp each (rows of at most 32 threads x Items groups), of `Rows` rows
/// in all (a `kiln tune` candidate): blocks of one warp leave a multiprocessor at its limit of
/// 32 blocks, half its warps, where registers would allow more.
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Items,
          int Pack, long long Rows>
__global__ void __launch_bounds__(32 * Pack)
    rows_packed(const row::RowArgs<Body, Epi, Extra, L> args, Index groups_per_row) {
  if (Index(blockIdx.x) * Index(Pack) + Index(threadIdx.x / 32u) >= Index(Rows)) return;
  row::run<Body, Row, Epi, Extra, L, V, Index, 32, Items, 1, false, false, Pack>(
      args, groups_per_row, row::NoGeometry{});
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
        rows_split(const row::RowArgs<Body, Epi, Extra, L> args, Index groups_per_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  row::run<Body, Row, Epi, Extra, L, V, Index, Block, Items, Split, false, false>(
      args, groups_per_row, row::NoGeometry{});
#else
  __trap();
#endif
}

/// Rows of a length known at run time (L is a RowsAt layout), one block per row, of up to Block
/// threads with Items > 0 (as many as the launch gives) or of Block threads streaming. Register
/// caps, so that registers do not limit the blocks a multiprocessor runs as they do not for the
/// kernels of one length (under launch bounds of 1024, ptxas takes more): packs of 1 value, 16
/// values a thread, are held to 32 (no spill; at 40 a block of 832 threads runs alone); packs of
/// 2 and 4, 32 values a thread, and packs of 8 with no weight or bias (softmax, the reductions)
/// to 48, which fits two blocks of up to 672 threads (layer_norm's packs of 2 spill 4 bytes
/// there); the rest (packs of 8 with a weight or bias, which spill at 48; streaming) have what a
/// block of Block threads leaves, 65536 / Block (64 at 1024).
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block,
          int Items>
__global__ void __maxnreg__(Items > 0 && Items * V <= 16               ? 32
                            : Items > 0 && (V < 8 || Extra::size == 0) ? 48
                            : Block > 256                              ? 65536 / Block
                                                                       : 255)
    rows_at(const row::RowArgs<Body, Epi, Extra, L> args, Index groups_per_row,
            const row::RowGeometry<Body, Epi, Extra, L> geometry) {
  row::run<Body, Row, Epi, Extra, L, V, Index, Block, Items, 1, (Items > 0), false>(
      args, groups_per_row, geometry);
}

/// rows_at split between the blocks of a cluster (sm_90 and later) as rows_split, in clusters
/// of as many blocks as the launch gives, up to Split (a launch attribute: no compiled cluster
/// dims). Rows in registers have the launch bounds of a staged rows_split: the blocks of 40
/// warps a multiprocessor, 48 registers (without them softmax's take 63); a norm's weight and
/// bias are staged in the launch's dynamic shared memory, as much as its block needs.
template <class Body, class Row, class Epi, class Extra, class L, int V, class Index, int Block,
          int Items, int Split>
__global__ void __launch_bounds__(Block, (Items > 0 ? 40 / (Block / 32) : 0))
    rows_split_at(const row::RowArgs<Body, Epi, Extra, L> args, Index groups_per_row,
                  const row::RowGeometry<Body, Epi, Extra, L> geometry) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  row::run<Body, Row, Epi, Extra, L, V, Index, Block, Items, Split, (Items > 0), true>(
      args, groups_per_row, geometry);
#else
  __trap();
#endif
}

}  // namespace kiln
