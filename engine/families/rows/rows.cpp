#include "engine/families/rows/rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/families/rows/row_buckets.hpp"
#include "engine/families/rows/row_templates.hpp"
#include "kernel_templates/kiln/row_config.cuh"

namespace kiln {

bool has_clusters(const std::string& arch) { return compiler::arch_number(arch) >= 90; }

codegen::Body identity_epilogue(DType dtype) {
  codegen::Body b;
  b.outputs = {dtype};
  b.results = {{codegen::Ref::Kind::row, 0}};
  return b;
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

bool along_columns(std::int64_t axis, bool all_axes, const Shape& x) {
  const std::int64_t rank = std::int64_t(x.size());
  if (all_axes || axis < -rank || axis >= rank) return false;
  for (std::int64_t d = (axis < 0 ? axis + rank : axis) + 1; d < rank; ++d)
    if (x[std::size_t(d)] != 1) return true;
  return false;
}

TensorView full_rank(TensorView v, const Shape& shape) {
  Shape strides = v.resolved_strides();
  while (v.shape.size() < shape.size()) {
    v.shape.insert(v.shape.begin(), 1);
    strides.insert(strides.begin(), 0);
  }
  v.strides = strides;
  return v;
}

namespace {

void erase_dim(TensorView& v, std::size_t d) {
  v.shape.erase(v.shape.begin() + std::ptrdiff_t(d));
  v.strides.erase(v.strides.begin() + std::ptrdiff_t(d));
}

std::int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// The column template's block: 512 threads, BX column groups (at least 128 bytes of each row)
// by BY threads along R; narrower and taller while there are fewer than 256 blocks. (`kiln
// tune` on an H100, sum over the first axis of f32 [32768, 4096]: 512 threads x 8 groups of 16
// bytes 186 us, x 4 groups 200 us; 256 x 2, 276 us: bench/NOTES.md.)
std::pair<int, int> column_block(std::int64_t outer, std::int64_t r, std::int64_t ig,
                                 int group_bytes) {
  const int min_bx = std::max(1, 128 / std::max(group_bytes, 1));
  int bx = 32;
  while (bx > min_bx && bx / 2 >= ig) bx /= 2;
  while (bx > min_bx && outer * ceil_div(ig, bx) < 256) bx /= 2;
  int by = 512 / bx;
  while (by > 1 && by / 2 >= r && bx * by > 32) by /= 2;
  return {bx, by};
}

// The row's strides per slot, as a kernel for rows of a dynamic length has them: rows of 1
// element broadcast every slot along the row, but take the strides of longer rows (`along_row`)
// and so their kernel.
std::vector<std::int64_t> row_strides(const RowKernel& k, const LayoutPlan& lp) {
  std::vector<std::int64_t> strides = lp.dims.back().stride;
  if (lp.dims.back().extent == 1 && lp.vec == 1 && k.along_row.size() == strides.size())
    for (std::size_t s = 0; s < strides.size(); ++s) strides[s] = k.along_row[s] ? 1 : 0;
  return strides;
}

// The axis `k` works along, from 0; ArgumentError when its bodies do not match its operands or
// the axis does not fit x.
std::size_t checked_axis(const RowKernel& k, const std::string& stem, const Shape& x_shape) {
  if (x_shape.empty()) throw ShapeError(fmt::format("{}: a row op needs at least one axis", stem));
  if (k.prologue.results.size() != 1 || k.prologue.inputs.size() != k.inputs.size() ||
      int(k.scalars.size()) != k.prologue.scalars ||
      k.epilogue.outputs.size() != k.outputs.size() ||
      k.epilogue.inputs.size() != k.epilogue_inputs.size() ||
      int(k.epilogue_scalars.size()) != k.epilogue.scalars || k.outputs.empty() ||
      (k.op->reduces && (k.outputs.size() != 1 || !k.epilogue_inputs.empty())))
    throw ArgumentError(fmt::format("{}: the bodies do not match their operands", stem));
  const std::int64_t rank = std::int64_t(x_shape.size());
  const std::int64_t axis = k.axis < 0 ? k.axis + rank : k.axis;
  if (k.axis < -rank || k.axis >= rank || (k.all_axes && !k.op->reduces) || k.axes < 1 ||
      (k.axes > 1 && (k.all_axes || axis + 1 < k.axes)))
    throw ArgumentError(fmt::format("{}: axis {} does not fit x of rank {}", stem,
                                    k.all_axes ? "all"
                                    : k.axes > 1
                                        ? fmt::format("{} (the last of {})", k.axis, k.axes)
                                        : std::to_string(k.axis),
                                    rank));
  return std::size_t(axis);
}

// Whether dim `d` is one that `k` reduces (or works along), `axis` its last.
bool along(const RowKernel& k, std::size_t d, std::size_t axis) {
  return k.all_axes || (d <= axis && d + std::size_t(k.axes) > axis);
}

// `o`, an output of `k` over x of `x_shape`, at x's rank: a reduction's seen with the reduced
// dims kept (extent 1: it steps by 0 along them). ShapeError if it does not fit.
TensorView output_view(const RowKernel& k, const std::string& stem, TensorView o,
                       const Shape& x_shape, std::size_t axis) {
  const std::size_t rank = x_shape.size();
  if (!k.op->reduces) {
    if (o.shape != x_shape)
      throw ShapeError(
          fmt::format("{}: output {} is not of shape {}", stem, o.describe(), to_string(x_shape)));
    return full_rank(o, x_shape);
  }
  Shape want = x_shape, strides = o.resolved_strides();
  for (std::size_t d = 0; d < rank; ++d)
    if (along(k, d, axis)) want[d] = 1;
  if (o.shape.size() < rank) {  // keepdim false: put the reduced dims back
    for (std::size_t d = 0; d < rank; ++d)
      if (along(k, d, axis) && o.shape.size() < rank) {
        o.shape.insert(o.shape.begin() + std::ptrdiff_t(d), 1);
        strides.insert(strides.begin() + std::ptrdiff_t(d), 0);
      }
  }
  if (o.shape != want)
    throw ShapeError(fmt::format("{}: output {} does not fit x of shape {}", stem, o.describe(),
                                 to_string(x_shape)));
  o.strides = strides;
  return full_rank(o, x_shape);
}

// Every operand of `k` at x's rank (the slots' order: outputs, inputs, extras, epilogue inputs),
// with the unit dims after the axis dropped, from them and from `shape` (x's), and the axes of
// a reduction over several merged into one: the axis is then last (the row template) or
// followed by a dim of 2 or more (the column template).
std::vector<TensorView> slot_views(const RowKernel& k, const std::string& stem, Shape& shape,
                                   std::size_t& axis, bool columns) {
  std::vector<TensorView> all;
  for (const TensorView& o : k.outputs) all.push_back(output_view(k, stem, o, shape, axis));
  // A gather's index tensors last: seen over the kernel's shape as its inputs are.
  for (const std::vector<TensorView>* group :
       {&k.inputs, &k.extras, &k.epilogue_inputs, &k.gathers.indices})
    for (const TensorView& v : *group) all.push_back(full_rank(v, shape));
  if (!k.all_axes)
    for (std::size_t d = shape.size(); d-- > axis + 1;)
      if (shape[d] == 1) {
        shape.erase(shape.begin() + std::ptrdiff_t(d));
        for (TensorView& v : all) erase_dim(v, d);
      }
  if (!k.all_axes && k.axes > 1) arrange_axes(k, stem, shape, all, axis, columns);
  return all;
}

// The kernel's slots before those of its gathers' index tensors (engine/families/gathers.hpp).
std::size_t own_slots(const RowKernel& k) {
  return k.outputs.size() + k.inputs.size() + k.extras.size() + k.epilogue_inputs.size();
}

// What a template's specialization gives besides the launch shape.
struct Instance {
  std::string expression, name;
  std::string_view header;  ///< the template's, under kernel_templates/kiln
};

// What a template puts after kiln's Args block: its Index, and the geometry of rows of a
// dynamic length (empty: none).
struct IndexArgs {
  std::uint64_t index = 0;
  std::vector<unsigned char> geometry;
};

// The column template along `axis` of `shape` (tunables block, cols), into L's launch shape
// and `index`.
Instance specialize_column_template(const RowKernel& k, const std::string& stem,
                                    const LayoutPlan& lp, const Shape& shape, std::size_t axis,
                                    int group_bytes, RowTunables t, KernelLaunch& L,
                                    IndexArgs& index) {
  const std::int64_t outer = product(shape, 0, axis), r = shape[axis],
                     ig = product(shape, axis + 1, shape.size()) / lp.vec;
  const auto fallback = column_block(outer, r, ig, group_bytes);
  auto [bx, by] = fallback;
  if (t.block != 0) {
    const auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
    if (t.items != 0 || !pow2(t.cols) || t.cols > 32 || !pow2(t.block) || t.block < 32 ||
        t.block > 512 || t.block < t.cols)
      throw ArgumentError(fmt::format(
          "{}: block {} cols {}: the column template takes block 32 to 512 threads and cols "
          "1 to 32 column groups, powers of two, cols <= block",
          stem, t.block, t.cols));
    bx = t.cols;
    by = t.block / t.cols;
  }
  t.block = bx * by, t.cols = bx;
  L.tunables = codegen::launch_tunables(row_tunable_table(), t, kColumnTemplate);
  index.index = L.groups;
  L.config.block[0] = unsigned(bx * by);
  L.config.grid[0] = grid_x(lp.groups ? std::uint64_t(outer * ceil_div(ig, bx)) : 0,
                            [&] { return fmt::format("{}: shape {}", stem, to_string(shape)); });
  ColumnTemplate tp;
  tp.functor = std::string(k.op->functor);
  tp.layout = k.gathers.layout_type(lp, own_slots(k));
  tp.vec = lp.vec;
  tp.index64 = lp.index64;
  tp.bx = bx, tp.by = by;
  tp.r = r, tp.ig = ig;
  const bool tuned = bx != fallback.first || by != fallback.second;
  return {tp.expression(), tp.name(stem, lp.dims.size(), tuned), tp.kHeader};
}

// The row template's default for rows of `per_row` groups: the heuristic's, or, for rows of a
// dynamic length (`at`), their bucket's. Rows are not packed by default (`pack`, several rows
// of one warp a block, is for `kiln tune`): a default that depended on the number of rows
// would compile another kernel for another batch, and packs ran within 3 % of one row a block
// (bench/NOTES.md).
RowTunables row_default(const RowKernel& k, std::int64_t per_row, int vec, bool at) {
  if (at) return bucket_row_tunables(per_row, vec, k.clusters, !k.op->reduces);
  RowTunables fallback = default_row_tunables(per_row, vec);
  // Where clusters run, a row too long for one block's registers is split between blocks;
  // a reduction over every element streams on 8 blocks rather than one.
  if (k.clusters && fallback.items == 0) {
    if (!k.op->reduces) {
      if (const RowTunables s = split_row_tunables(per_row, vec); s.block) fallback = s;
    } else if (k.all_axes && per_row >= 8 * 1024) {
      fallback.split = 8;
    }
  }
  return fallback;
}

// The dynamic shared memory of a row launch (rows.cuh). A streaming op that writes the row keeps
// what it can of it there for pass 2 (the stash: the rest is recomputed from L2). A bucket's
// kernel holds the cluster's statistics for the most blocks it may split between (row_reduce.cuh,
// ClusterParts: each warp's, at most 16 bytes, from each block) where the kernel for one length
// holds them for its own split; its stash leaves that room, so that as many blocks fit a
// multiprocessor (a block fewer runs the row at ~0.84 of the speed).
// A bucket's rows split in registers stage a norm's weight and bias there (row_parts.cuh,
// Staged: 16-byte groups), as much as the launch's block needs, from a 128-byte boundary; a
// kernel whose extra operands are not contiguous 16-byte groups stages nothing and leaves it
// unused.
unsigned row_shared_bytes(const RowKernel& k, const RowTunables& t, BucketLaunch run,
                          std::int64_t per_row, int vec, bool at) {
  using namespace row::config;  // the sizes the templates lay shared memory out by
  if (t.items == 0 && !k.op->reduces) {
    std::uint64_t stash = std::uint64_t(ceil_div(per_row, run.split)) * std::uint64_t(vec) * 4;
    if (at && t.split > 1) {
      const std::uint64_t parts =
          std::uint64_t(t.split - run.split) * std::uint64_t(t.block / 32) * kStatBytes;
      stash -= std::min(stash, parts);
    }
    return unsigned(std::min<std::uint64_t>(stash, UINT32_MAX));
  }
  if (at && t.items > 0 && t.split > 1 && !k.extras.empty())
    return unsigned(run.block * t.items) * kStagedGroupBytes * unsigned(k.extras.size()) +
           kStagedAlign;
  return 0;
}

// The row template over the last axis or every element (tunables block, items, split), into
// L's launch shape and `index`.
Instance specialize_row_template(const RowKernel& k, const std::string& stem, const LayoutPlan& lp,
                                 std::int64_t run_elems, RowTunables t, KernelLaunch& L,
                                 IndexArgs& index) {
  // A row of several axes spans the layout's last dims (the kernel's cursor steps through
  // them as one flat index): `run_elems` elements.
  const std::int64_t per_row = k.all_axes ? lp.groups
                               : k.axes > 1 ? run_elems / lp.vec
                                            : lp.dims.back().extent;
  const bool at = k.dynamic_row && !k.all_axes;  // rows placed at run time: a bucket's kernel
  const std::int64_t rows = per_row ? lp.groups / per_row : 0;
  const RowTunables fallback = row_default(k, per_row, lp.vec, at);
  if (at && t.block != 0) {
    throw ArgumentError(fmt::format(
        "{}: tunables are for one row length; a dynamic one takes its bucket's kernel", stem));
  } else if (t.block == 0) {
    t = fallback;
  } else if (std::string why = reject_row_tunables(t, per_row, lp.vec, k.clusters); !why.empty()) {
    throw ArgumentError(fmt::format("{}: {}", stem, why));
  }
  L.tunables = codegen::launch_tunables(row_tunable_table(), t,
                                        kRowTemplate | (k.clusters ? kRowClusters : 0));
  index.index = std::uint64_t(per_row);
  // A bucket's kernel takes its block and its blocks per row (a cluster) from the launch.
  const BucketLaunch run = at ? bucket_launch(t, per_row, lp.vec) : BucketLaunch{t.block, t.split};
  L.config.block[0] = unsigned(run.block * t.pack);
  L.config.cluster[0] = at ? unsigned(run.split) : 1u;
  L.config.grid[0] =
      grid_x(std::uint64_t(ceil_div(rows, t.pack)) * std::uint64_t(run.split), [&] {
        return fmt::format("{}: {} rows of {} groups, {} blocks a row", stem, rows, per_row,
                           run.split);
      });
  if (at) index.geometry = rows_at_geometry(lp);
  L.bucketed = at;
  // A stash past what the target grants is cut at launch anyway (the kernel reads its size).
  L.config.shared = row_shared_bytes(k, t, run, per_row, lp.vec, at);
  if (k.max_shared > 0) L.config.shared = std::min(L.config.shared, unsigned(k.max_shared));
  std::vector<DType> extra_types;
  for (const TensorView& v : k.extras) extra_types.push_back(v.dtype);
  RowTemplate tp;
  tp.functor = std::string(k.op->functor);
  tp.extras = codegen::render_types(extra_types);
  if (at && !k.gathers.empty())  // the fusion pass copies a gather view of a dynamic row
    throw Error(fmt::format("internal error: {} reads at indices along a dynamic row", stem));
  tp.layout = at ? rows_at_type(lp, row_strides(k, lp)) : k.gathers.layout_type(lp, own_slots(k));
  tp.vec = lp.vec;
  tp.index64 = lp.index64;
  tp.block = t.block, tp.items = t.items, tp.split = t.split, tp.pack = t.pack;
  tp.rows = rows;
  tp.at = at;
  return {tp.expression(), tp.name(stem, k.all_axes, lp.dims.size(), fallback), tp.kHeader};
}

// `k` over `x_shape` with the column template (`columns`) or the row template: what both share
// (the operands' layout, the launch's pointers and scalars) around the template's own part.
KernelLaunch specialize_row_op(const RowKernel& kernel, const std::string& stem,
                               const Shape& given_shape, RowTunables t, bool columns) {
  Shape x_shape = given_shape;
  const RowKernel k = kernel.groups ? grouped_rows(kernel, stem, x_shape) : kernel;
  std::size_t axis = checked_axis(k, stem, x_shape);
  // The family chose the template; the other one would run along another axis than k's.
  if (columns != along_columns(k.axis, k.all_axes, x_shape))
    throw ArgumentError(fmt::format("{}: the {} template does not run along axis {} of x {}", stem,
                                    columns ? "column" : "row", k.axis, to_string(x_shape)));
  Shape shape = x_shape;
  const std::vector<TensorView> all = slot_views(k, stem, shape, axis, columns);
  const std::size_t own = own_slots(k);
  GatherSlots gathers = k.gathers;  // its index tensors as slot_views arranged them
  gathers.indices.assign(all.begin() + std::ptrdiff_t(own), all.end());
  std::vector<const TensorView*> views;
  std::size_t widest = 1;
  for (std::size_t i = 0; i < own; ++i) {
    views.push_back(&all[i]);
    widest = std::max(widest, size_of(all[i].dtype));
  }
  // The dims it works along: the axis (a run of several merged into it for the column
  // template), the run of axes ending at it (the row template), or every one.
  const std::size_t first = axis + 1 - std::size_t(columns || k.all_axes ? 1 : k.axes);
  std::vector<bool> reduced(shape.size(), k.all_axes);
  for (std::size_t d = first; d <= axis; ++d) reduced[d] = true;
  const bool one_dim_row = !k.all_axes && !columns && k.axes == 1;
  const LayoutPlan lp = gathers.plan(views, k.outputs.size(), shape, one_dim_row, 0, reduced);
  const std::int64_t run = product(shape, first, axis + 1);

  KernelLaunch L;
  IndexArgs index;
  L.vec = lp.vec;
  L.groups = std::uint64_t(lp.groups);
  const Instance instance = columns ? specialize_column_template(k, stem, lp, shape, axis,
                                                                 lp.vec * int(widest), t, L, index)
                                    : specialize_row_template(k, stem, lp, run, t, L, index);
  const codegen::Body epilogue = codegen::narrow_fast_math(k.epilogue);
  L.spec.source = codegen::render_source(
      instance.header, {{"kiln_body", &k.prologue}, {"kiln_epilogue", &epilogue}});
  L.spec.expression = instance.expression;
  L.spec.options = codegen::builtin_options();
  L.spec.name = instance.name;
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.scalars = k.scalars;
  L.scalars.push_back(float(k.eps));
  L.scalars.insert(L.scalars.end(), k.epilogue_scalars.begin(), k.epilogue_scalars.end());
  L.layout = kiln_layout(L.pointers, L.scalars, index.index, lp.index64, std::move(index.geometry));
  return L;
}

}  // namespace

KernelLaunch specialize_rows(const RowKernel& k, const std::string& stem, const Shape& x_shape,
                             RowTunables t) {
  return specialize_row_op(k, stem, x_shape, t, false);
}

KernelLaunch specialize_columns(const RowKernel& k, const std::string& stem, const Shape& x_shape,
                                RowTunables t) {
  return specialize_row_op(k, stem, x_shape, t, true);
}

}  // namespace kiln
