#pragma once
// Specialization of the row template (kernel_templates/kiln/rows.cuh): a row op over the last
// axis of `shape`, its input computed by a fused elementwise prologue and its result passed
// through a fused elementwise epilogue.

#include <optional>
#include <string>
#include <vector>

#include "engine/codegen/autotune.hpp"
#include "engine/codegen/codegen.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/codegen/layout.hpp"
#include "engine/families/gathers.hpp"
#include "ops/op.hpp"

namespace kiln {

/// The bodies and operands of one row kernel.
struct RowKernel {
  const ops::OpDef* op = nullptr;
  codegen::Body prologue;  ///< one result: the row op's input element
  codegen::Body epilogue;  ///< reads the row op's value (Ref::Kind::row); one result per output
  std::vector<TensorView> outputs;  ///< the epilogue's; a reduction has one, one value per row
  std::vector<TensorView> inputs;   ///< the prologue's
  std::vector<TensorView> extras;   ///< weight, bias ([C])
  std::vector<TensorView> epilogue_inputs;
  std::vector<float> scalars;           ///< the prologue's
  std::vector<float> epilogue_scalars;  ///< the epilogue's
  double eps = 1e-5;
  std::int64_t axis = -1;  ///< the axis it works along (negative: from the end)
  /// A reduction over several adjacent axes: how many, `axis` the last of them. They run as
  /// one row (or column) where every operand's strides let them merge into one dim.
  int axes = 1;
  /// group_norm's groups (0 for other ops): x [N, C, *spatial] runs as rows of [N, G, C / G,
  /// *spatial] (grouped_rows).
  std::int64_t groups = 0;
  bool all_axes = false;   ///< a reduction over every element
  int max_shared = 0;      ///< bytes of shared memory a block may use on the target (0: no cap)
  bool clusters = false;   ///< the target runs thread-block clusters (sm_90 and later): long rows
                           ///< split between blocks
  /// The row's length is a dynamic dim: the kernel of its bucket
  /// (engine/families/rows/row_buckets.hpp), which serves every length of it, rather than one for
  /// this length.
  bool dynamic_row = false;
  /// With dynamic_row, per slot (outputs, inputs, extras, epilogue inputs): whether it runs
  /// along the row (else it is broadcast along it), as rows of 2 or more show it. Rows of 1
  /// take it from here, so that they share those rows' kernel. Empty: from the views.
  std::vector<bool> along_row;
  /// Its slots that read gather views in place (engine/families/gathers.hpp); none by default.
  GatherSlots gathers;
};

/// The run of `k.axes` axes ending at `axis` in `shape` and in every view of `all` (at its
/// rank) put in the order of x's strides, largest first (a reduction is the same in any order);
/// with `merge` (the column template) merged into one dim, `axis` moved to it: ShapeError where
/// some view's strides do not let them merge.
void arrange_axes(const RowKernel& k, const std::string& stem, Shape& shape,
                  std::vector<TensorView>& all, std::size_t& axis, bool merge);

/// group_norm's kernel `k` (over x of `shape` [N, C, *spatial], its extras the weight and
/// bias [C]) as rows: every view, and `shape`, split into [N, G, C / G, *spatial], the row the
/// dims after G; the weight and bias the epilogue's first inputs (per channel), applied before
/// its own steps. ShapeError where C does not split into k.groups.
RowKernel grouped_rows(const RowKernel& k, const std::string& stem, Shape& shape);

/// A weight or bias [C] as a view at `rank` along dim 1 (not the last, as broadcasting
/// aligns), 0 strides elsewhere.
TensorView along_channels(TensorView v, std::size_t rank);

/// `epi` after y = row * weight + bias (those of `affine`: weight, then bias): the epilogue's
/// inputs are then the affine ones and its own, in that order.
codegen::Body affine_epilogue(const codegen::Body& epi, const std::vector<TensorView>& affine);

/// `v` at the rank of `shape`: its broadcast leading dims explicit (extent 1, stride 0).
TensorView full_rank(TensorView v, const Shape& shape);

/// group_norm's kernel `k` over a channels_last x of `shape` ([N, C, *spatial] with C
/// contiguous) in one cooperative launch of kernel_templates/kiln/group_rows.cuh, each image split
/// between blocks that hold it in registers and merge its groups' statistics through the
/// launch's workspace; `sms` the target's multiprocessors (one such block each). Nothing where
/// it does not apply: another memory order, gathers, a dynamic row, an image too large for the
/// GPU's registers, channels whose groups of 16 bytes no block of 1024 threads covers.
std::optional<KernelLaunch> specialize_group_rows(const RowKernel& k, const std::string& stem,
                                                  const Shape& shape, int sms);

/// Whether `arch` ("sm_90a") runs thread-block clusters (sm_90 and later).
bool has_clusters(const std::string& arch);

/// The identity epilogue: the row op's value, stored as `dtype`.
codegen::Body identity_epilogue(DType dtype);

/// The row template's tunables (rows.cuh): threads per block, and groups of the row each thread
/// keeps in registers (0: threads stride over the row and pass 2 reads it again).
struct RowTunables {
  int block = 0;  ///< 0: the heuristic default (with items, cols)
  int items = 0;
  int cols = 0;   ///< the column template's column groups per block (BX; block / cols threads along
                  ///< the axis)
  int split = 1;  ///< blocks per row, a cluster (1, 2, 4 or 8; more than 1 needs sm_90)
  int pack = 1;   ///< rows per block, a warp each (1, 2, 4 or 8; more than 1: block 32, items)
  /// 1: group_norm over a channels_last x as one cooperative launch (specialize_group_rows),
  /// the other tunables unused. A `kiln tune` candidate, not the default: on an H100 it ran
  /// 1.0-1.7x the row template's time (bench/NOTES.md).
  int grouped = 0;
};

/// `t`'s "block", "items", "cols", "split" and "pack" (missing: 0, the default); ArgumentError naming
/// `stem` for any other name.
RowTunables row_tunables(const Tunables& t, const std::string& stem);

/// The heuristic default for rows of `row_groups` groups of `vec` elements: about 64 bytes per
/// thread in registers (16 f32 or 32 bf16 values; at most 32) and as many threads as that
/// needs, 32 to 1024; rows too long for that stream with 1024 threads.
RowTunables default_row_tunables(std::int64_t row_groups, int vec);

/// The default for rows that default_row_tunables streams, where clusters run: the row split
/// between the fewest blocks (2, 4 or 8) that hold it: groups of 8 values (2-byte dtypes) in
/// registers, 32 values per thread in 256 threads; others in a stash of at most 64 KiB per
/// block, streamed by 512 threads (the stash keeps f32, twice a 2-byte value's bytes): what
/// `kiln tune` found fastest for rows of 65536 (the measurements: bench/NOTES.md). {0} when 8
/// blocks cannot hold it.
RowTunables split_row_tunables(std::int64_t row_groups, int vec);

/// Why `t` cannot run rows of `row_groups` groups of `vec` ("" if it can); `clusters`: whether
/// the target runs thread-block clusters (a split needs them).
std::string reject_row_tunables(const RowTunables& t, std::int64_t row_groups, int vec,
                                bool clusters);

/// Whether a row op along `axis` (negative: from the end) of x of shape `x` runs the column
/// template: a dim other than 1 follows the axis (else the row template, as for `all_axes`).
bool along_columns(std::int64_t axis, bool all_axes, const Shape& x);

/// Specializes `k` over `shape` (the prologue's result shape) with the row template, along the
/// last axis or every element (tunables block, items, split). Throws ShapeError for outputs that
/// do not fit, ArgumentError for tunables that cannot run this row or for an axis that takes the
/// column template (along_columns).
KernelLaunch specialize_rows(const RowKernel& k, const std::string& stem, const Shape& shape,
                             RowTunables tunables = {});

/// The same with the column template (kernel_templates/kiln/columns.cuh; tunables block, cols),
/// along an axis a dim other than 1 follows (along_columns; any other is an ArgumentError).
KernelLaunch specialize_columns(const RowKernel& k, const std::string& stem, const Shape& shape,
                                RowTunables tunables = {});

namespace autotune {
/// The row template for rows of `row_groups` groups of `vec` elements: threads per block,
/// groups per thread in registers (0: streaming) and, where `clusters` run (sm_90 and later),
/// blocks per row; candidates that do not cover a row, or would leave half their threads
/// idle, are rejected. `fallback` is the heuristic default the specializer chose.
Space rows_space(long long row_groups, int vec, const Candidate& fallback, bool clusters);
/// The column template: threads per block and column groups per block (powers of two);
/// `fallback` is the heuristic default the specializer chose.
Space columns_space(const Candidate& fallback);
}  // namespace autotune

}  // namespace kiln
