#pragma once
// Specialization of the elementwise template for the exact operands of one call: the layout
// is broadcast, stripped of unit dims and coalesced; the vector width follows from pointer
// alignment and strides; the index width from the largest offset.

#include <cstdint>
#include <vector>

#include <kiln/ops.hpp>

#include "engine/kernel.hpp"
#include "ops/op.hpp"

namespace kiln {

/// A specialized elementwise kernel and the arguments of its launch.
struct ElementwiseLaunch {
  KernelSpec spec;
  std::uint64_t groups = 0;  ///< iterations (V elements each); 0 = nothing to do
  bool index64 = false;
  unsigned grid = 0;
  unsigned block = 0;
  std::uint64_t pointers[4] = {0, 0, 0, 0};  ///< out, in0, in1, in2
  float scalars[3] = {0, 0, 0};
};

/// The template's tunables. Zero means the heuristic default.
struct ElementwiseTunables {
  int block = 0;   ///< threads per block
  int unroll = 0;  ///< groups per thread, all loaded before the first is used
};

/// Specializes `op` writing `out` from `operands` (kernel slots, see ops::kernel_operands).
/// Views must match `out`'s shape by broadcasting; throws ShapeError otherwise.
ElementwiseLaunch specialize_elementwise(const ops::OpDef& op, const TensorView& out,
                                         const std::vector<Operand>& operands,
                                         ElementwiseTunables tunables = {});

}  // namespace kiln
