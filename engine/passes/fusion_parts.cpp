// A concat's kernels (engine/passes/fusion.hpp, part_groups): its result is planned as one
// value, and each operand's kernel writes the operand into its window of it — computed there by
// the operand's elementwise producers, so that such an operand is never written anywhere else
// first, or copied from memory (a graph input, an anchor's result, a view).
#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {

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
    out.push_back(std::move(grp));
  }
  return out;
}

void overlap_parts(std::vector<FusedGroup>& groups) {
  for (std::size_t i = 1; i < groups.size(); ++i) {
    const FusedGroup &prev = groups[i - 1], &grp = groups[i];
    groups[i].beside_previous =
        grp.part > 0 && prev.anchor_node == grp.anchor_node && prev.part == grp.part - 1;
  }
}

}  // namespace kiln
