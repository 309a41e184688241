#pragma once
// Kernel families: what turns one fused group of a plan into a specialized kernel. A family
// (elementwise, rows, columns, gemm, scan, view, users' templates) claims the groups it computes,
// specializes one for its operands' views, the target arch and a tuning record into a
// KernelLaunch (the spec, its launch configuration and arguments), declares the tunables
// `kiln tune` searches, and names its template headers. The registry (registry.cpp) asks the
// families in order; nothing outside a family's own files branches on which family it is.
// Adding a family: its folder here (its files, with a function returning it, and a
// CMakeLists.txt listing them), and its line in registry.cpp. The ops it computes name it
// (ops::FusionRoles::family) and claims() checks that name.

#include <cstdint>
#include <kiln/graph.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/tuning.hpp"
#include "engine/codegen/autotune.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/target.hpp"

namespace kiln {

/// What a family specializes: one fused group over the views of every node's value (by node
/// id). `shapes` is the graph whose shapes the views have (bound: no dynamic dims); `planned`
/// the graph as planned (a dynamic dim negative), so a family can tell what a run may change.
struct GroupWork {
  const FusedGroup& group;
  const std::vector<TensorView>& values;
  const Graph& shapes;
  const Graph& planned;
  const Target& target;  ///< the arch and the limits of the GPU the kernel is for

  /// The views of `ids`' values, in order.
  std::vector<TensorView> views(const std::vector<int>& ids) const;
};

class Family {
 public:
  virtual ~Family() = default;
  /// "elementwise", "rows", "columns": in messages and `kiln plan`'s notes.
  virtual std::string_view name() const = 0;
  /// Whether this family computes `grp` (whose values have `shapes`' shapes).
  virtual bool claims(const FusedGroup& grp, const Graph& shapes) const = 0;
  /// The kernel of `work`, with `tunables` (a missing one takes the family's default);
  /// ArgumentError for a tunable it does not have or a value it cannot run.
  virtual KernelLaunch specialize(const GroupWork& work, const Tunables& tunables) const = 0;
  /// What `kiln tune` searches for `base`, the kernel this family specialized for `grp` with
  /// its defaults, on `arch`.
  virtual autotune::Space space(const FusedGroup& grp, const KernelLaunch& base,
                                const Target& target) const = 0;
  /// What this family keeps of `grp` from `planned` (the graph as planned: a dynamic dim
  /// negative) for its every specialization: worked out once per plan instead of per extent a
  /// run meets. None by default.
  virtual std::shared_ptr<const GroupPayload> analyze(const FusedGroup&, const Graph&) const {
    return nullptr;
  }
  /// The headers under kernel_templates/kiln its kernels include (none: a user's template
  /// brings its own).
  virtual std::vector<std::string_view> headers() const = 0;
  /// Extents of a dynamic dim at which this family's kernels that serve a range of extents
  /// (rows placed by a geometry parameter) differ: `kiln precompile` specializes a plan at each.
  /// None by default: a family's kernels serve every extent, or are one per extent.
  virtual std::vector<std::int64_t> extent_probes() const { return {}; }
};

/// The registered families, in the order they are asked.
const std::vector<const Family*>& families();

/// The family that computes `grp`: the first that claims it (an internal error if none does).
const Family& family_of(const FusedGroup& grp, const Graph& shapes);

/// Sets the payload of each group of `planned` anchored on an op of a family (the family its
/// op names), as that family analyzes it.
void analyze_groups(const Graph& planned, std::vector<FusedGroup>& groups);

/// `work`'s kernel by its family, with `tunables`; the launch names its family.
KernelLaunch specialize_group(const GroupWork& work, const Tunables& tunables = {});

/// `work`'s kernel as `records` (one GPU's) tuned it: with the tunables of the record whose
/// signature is the default kernel's spec id, else the default. A record whose tunables no
/// longer fit is ignored, with a warning once per record.
KernelLaunch specialize_tuned(const GroupWork& work, const cache::TuningDb& records);

}  // namespace kiln
