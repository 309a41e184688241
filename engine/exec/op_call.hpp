#pragma once
// One eager op call (`kiln::call`) as the one-node graph of a plan: an input node per tensor
// operand, the op's node "out", fused into the one group a plan of it would run. Eager calls
// and plans so take one path: the group's family specializes it.

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <string>
#include <vector>

#include "cache/tuning.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/target.hpp"
#include "ops/op.hpp"

namespace kiln {

struct OpCall {
  Graph graph;
  FusedGroup group;
  std::vector<TensorView> values;  ///< by node id: each operand's view, then `out`
};

/// `op` on `args` writing `out` (which has the result's shape and dtype). Scalar operands are
/// the kernel's arguments, not part of it.
OpCall op_call(const ops::OpDef& op, const TensorView& out, const std::vector<Operand>& args,
               const Attrs& attrs);

/// The call's kernel for `target`, with `tunables` (missing ones: the default). Its pointers are
/// the output's, then each tensor operand's; its scalars each scalar operand's, then the
/// attributes' (clamp's bounds), then the family's own (a norm's eps).
KernelLaunch specialize_call(const OpCall& call, const Target& target,
                             const Tunables& tunables = {});

/// The call's kernel as `records` (one GPU's) tuned it, as a plan of it would run it
/// (specialize_tuned).
KernelLaunch specialize_call(const OpCall& call, const Target& target,
                             const cache::TuningDb& records);

}  // namespace kiln
