#pragma once
// Rows whose length is a dynamic dim ("?"): instead of a kernel per length, a kernel per bucket
// of lengths. A bucket fixes the row template's strategy (groups per thread, blocks per row)
// and the vector width; the length, the block's threads and where each row starts are the
// launch's (rows.cuh's rows_at and rows_split_at, a RowsAt layout and its row::Geometry).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/families/rows/rows.hpp"
#include "engine/codegen/layout.hpp"

namespace kiln {

/// The strategy of the bucket that rows of `row_groups` groups of `vec` fall in (`clusters`:
/// the target splits rows between the blocks of a cluster; `writes_row`: the op writes the row,
/// as softmax and the norms do, rather than reducing it). `block` is the most threads a block
/// of it runs, `split` the most blocks a row splits between (the launch picks how many).
///   - Registers, one block: up to 1024 threads x 16 values each (packs of 1), else 32.
///   - With clusters, packs of 8 values or more in registers: 2 to 8 blocks of up to 256
///     threads.
///   - With clusters, a stash in shared memory: 2 to 8 blocks of 512 threads, 64 KiB each.
///   - Longer: 1024 threads stream the row.
RowTunables bucket_row_tunables(std::int64_t row_groups, int vec, bool clusters, bool writes_row);

/// How a launch of bucket `t` runs rows of `row_groups` groups of `vec`: blocks per row (the
/// fewest that hold it, up to t.split) and threads per block (the fewest whole warps whose
/// groups in registers cover their share; t.block when it stashes or streams).
struct BucketLaunch {
  int block;
  int split;
};
BucketLaunch bucket_launch(const RowTunables& t, std::int64_t row_groups, int vec);

/// Row lengths, in elements, at which a graph meets every bucket kernel it can: each bucket of
/// each vector width, at a length of exactly that width (and at 1). What `kiln precompile`
/// specializes a graph with a dynamic row length at.
std::vector<std::int64_t> row_bucket_probes();

/// The RowsAt layout type of `lp` (its last dim the row; the dims outside it, at least one,
/// placed by the geometry), with `inner` as the row's strides per slot.
std::string rows_at_type(const LayoutPlan& lp, const std::vector<std::int64_t>& inner);

/// The row::Geometry<D, K> bytes of `lp`'s dims outside the row (one of extent 1 if none).
std::vector<unsigned char> rows_at_geometry(const LayoutPlan& lp);

}  // namespace kiln
