// A concat's kernels (engine/passes/fusion.hpp, part_groups): its result is planned as one
// value, and each operand is written into its window of it — computed there by the operand's
// elementwise producers, so that such an operand is never written anywhere else first, or
// copied from memory (a graph input, an anchor's result, a view). Adjacent operands of one shape
// share a kernel (an output a window): the U-Net's skip concat of two halves is one launch, not
// two with the second's start and the first's tail apart.
#include <algorithm>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

// Operands a kernel writes at most, and the tensors it reads at most: each part's packs are
// loaded and computed in the same thread, so registers grow with them.
constexpr int kMostParts = 4;
constexpr std::size_t kMostInputs = 8;

bool gathers(const Graph& g, const FusedGroup& grp) {
  return std::any_of(grp.inputs.begin(), grp.inputs.end(),
                     [&](int id) { return fusion::is_gather(g, id); });
}

// `next` (the operand after `grp`'s last) written by `grp`'s kernel too, where it may be.
bool join(const Graph& g, FusedGroup& grp, const FusedGroup& next) {
  std::vector<int> inputs = grp.inputs;
  for (int id : next.inputs)
    if (std::find(inputs.begin(), inputs.end(), id) == inputs.end()) inputs.push_back(id);
  if (grp.parts >= kMostParts || g.node(grp.x).shape != g.node(next.x).shape ||
      inputs.size() > kMostInputs || gathers(g, grp) || gathers(g, next))
    return false;
  std::sort(inputs.begin(), inputs.end());
  std::vector<int> steps = grp.steps;  // both in id order, which is a topological one
  steps.insert(steps.end(), next.steps.begin(), next.steps.end());
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  grp.inputs = std::move(inputs);
  grp.steps = std::move(steps);
  ++grp.parts;
  return true;
}

}  // namespace

std::vector<FusedGroup> part_groups(const Graph& g, int id, const std::set<int>& stop) {
  const Graph::Node& n = g.node(id);
  std::vector<FusedGroup> out;
  for (std::size_t i = 0; i < n.args.size(); ++i) {
    FusedGroup grp;
    grp.anchor = &op_def(g, n.op);
    grp.anchor_node = id;
    grp.outputs = {id};
    grp.part = int(i);
    grp.x = std::get<int>(n.args[i]);
    fusion::collect(g, {grp.x}, stop, grp);
    if (!out.empty() && join(g, out.back(), grp)) continue;
    out.push_back(std::move(grp));
  }
  return out;
}

void overlap_parts(std::vector<FusedGroup>& groups) {
  for (std::size_t i = 1; i < groups.size(); ++i) {
    const FusedGroup &prev = groups[i - 1], &grp = groups[i];
    groups[i].beside_previous = grp.part > 0 && prev.anchor_node == grp.anchor_node &&
                                prev.part + prev.parts == grp.part;
  }
}

}  // namespace kiln
