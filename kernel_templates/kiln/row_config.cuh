#pragma once
// The row templates' shared-memory sizes that the host's launches must match: the templates
// (row_parts.cuh, row_reduce.cuh) lay shared memory out with them and the host
// (engine/families/rows/rows.cpp) sizes each launch's dynamic shared memory with them. Plain
// C++ that g++ compiles into the host (as "kernel_templates/kiln/row_config.cuh") and NVRTC into
// the kernels (as <kiln/row_config.cuh>). Enumerators, not constexpr variables: a namespace's
// constexpr variable that device code reads may become a global of the module, which moves the
// math library's tables and so changes the code of every kernel that reads them.

namespace kiln::row::config {

enum : unsigned {
  /// The most one warp's statistic takes in a cluster's merge (row_reduce.cuh): a bucket's
  /// stash leaves this much for each warp of each block the row may be split between.
  kStatBytes = 16,
  /// One staged group of a norm's weight or bias (row_parts.cuh, Staged).
  kStagedGroupBytes = 16,
  /// Staged planes start at this boundary of dynamic shared memory (the TMA's copies into a
  /// 16-byte aligned one ran 1-4 % slower); a launch gives this much more to align them.
  kStagedAlign = 128,
};

}  // namespace kiln::row::config
