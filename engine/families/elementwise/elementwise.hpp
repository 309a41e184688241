#pragma once
// Specialization of the elementwise template for the exact operands of one kernel (its layout
// planned by engine/codegen/layout.hpp).

#include <cstdint>
#include <cstring>
#include <kiln/ops.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/codegen/autotune.hpp"
#include "engine/codegen/codegen.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/codegen/layout.hpp"
#include "engine/families/gathers.hpp"
#include "engine/codegen/tunable_table.hpp"
#include "ops/op.hpp"
#include "stages/kernel.hpp"

namespace kiln {

/// The template's tunables. Zero means the heuristic default.
struct ElementwiseTunables {
  // One group a thread, 128 threads a block: as fast as any other at 64M elements, and the
  // most blocks for small grids, where a thread's chain of costly math (pow) is the time
  // (kiln_bench_variants sweeps them).
  static constexpr int kDefaultBlock = 128;
  static constexpr int kDefaultUnroll = 1;
  int block = 0;   ///< threads per block
  int unroll = 0;  ///< groups per thread, all loaded before the first is used
};

/// The template's tunables, once: elementwise_tunables() parses by it, a launch records its
/// rows and autotune::elementwise_space() searches them.
const codegen::TunableTable<ElementwiseTunables>& elementwise_tunable_table();

/// `t`'s "block" and "unroll" (missing: 0, the default); ArgumentError naming `stem` for any
/// other name.
ElementwiseTunables elementwise_tunables(const Tunables& t, const std::string& stem);

/// The template's parameters (elementwise.cuh's `elementwise<Body, L, V, Index, Block,
/// Unroll>`) as the specialization chose them.
struct ElementwiseTemplate {
  static constexpr std::string_view kHeader = "elementwise.cuh";
  std::string layout;
  int vec = 1;
  bool index64 = false;
  int block = ElementwiseTunables::kDefaultBlock;
  int unroll = ElementwiseTunables::kDefaultUnroll;
  /// A kernel that may run beside the one before it (LaunchConfig::beside): a template
  /// argument only where set, so other kernels keep their expressions.
  bool beside = false;

  std::string expression() const;
  /// "<stem>__r2v4", with "_b<block>u<unroll>" where they are not the defaults; `dims` the
  /// layout's.
  std::string name(std::string_view stem, std::size_t dims) const;
};

/// The window of `v` of `len` entries from `start` along `axis` (a slice_update's, a concat
/// part's): its strides resolved, its data and capacity moved `offset` bytes to its first
/// element, so that a specialization sees the window's own alignment (no vector store wider
/// than it allows); the launch adds the same `offset` to the tensor's address.
struct Window {
  TensorView view;
  std::int64_t offset = 0;
};
Window window_along(TensorView v, std::size_t axis, std::int64_t start, std::int64_t len);

/// Specializes `body` writing `outputs` (all of one shape) from `inputs` (broadcast to it).
/// `stem` names the kernel ("silu_add_mul"); dtypes, rank and vector width are appended.
/// Throws ShapeError for views that do not fit. `beside`: the template's variant that may run
/// beside the kernel before it (ElementwiseTemplate::beside); the caller sets the launch's.
KernelLaunch specialize_elementwise(const codegen::Body& body, const std::string& stem,
                                    const std::vector<TensorView>& outputs,
                                    const std::vector<TensorView>& inputs,
                                    std::vector<float> scalars, ElementwiseTunables tunables = {},
                                    const GatherSlots& gathers = {}, bool beside = false);

namespace autotune {
/// The elementwise template's tunables: threads per block x groups per thread.
Space elementwise_space();
}  // namespace autotune

}  // namespace kiln
