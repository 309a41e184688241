// Prologues an anchor computes as it loads its operand 0 (ops::FusionRoles::loads_prologue):
// attention(cast(x), k, v) reads x and rounds each element of q to q's dtype as its tile lands in
// shared memory, so the elementwise kernel that would write q goes.
#include <algorithm>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using namespace fusion;

// The elementwise kernel (no anchor, no concat part) that writes node `id`; -1 if none.
int writer_of(const std::vector<FusedGroup>& groups, int id) {
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const FusedGroup& grp = groups[k];
    if (!grp.anchor && grp.part < 0 &&
        std::find(grp.outputs.begin(), grp.outputs.end(), id) != grp.outputs.end())
      return int(k);
  }
  return -1;
}

// The tensors of `grp`'s epilogue slots (ops::FusionRoles::epilogue_tensors): its outputs past
// the first (an lse counted too) and the epilogue's inputs.
std::size_t epilogue_tensors(const FusedGroup& grp) {
  const std::size_t outputs = grp.outputs.empty() ? 0 : grp.outputs.size() - 1;
  return outputs + grp.epilogue_inputs.size();
}

// Whether `grp` computes `q`, which `pro` (q's chain, collected from memory) computes from its
// inputs: the chain's inputs are plain memory (no gather or remap view, no integer, none an
// in-place write takes), q is read by nothing else, and the prologue's tensors and scalars fit
// the slots beside the epilogue's.
bool takes(const Graph& g, const std::set<int>& needed, const std::vector<FusedGroup>& groups,
           const FusedGroup& grp, int q, const FusedGroup& pro) {
  const ops::FusionRoles& r = grp.anchor->fusion;
  if (pro.inputs.empty() || pro.steps.empty() || involves_integer(g, q) ||
      g.node(q).shape.size() > r.epilogue_rank || read_outside(g, needed, groups, grp, q) ||
      written_in_place(g, q) ||  // a slice_update's result is q's memory: q must be written
      std::count(grp.inputs.begin(), grp.inputs.end(), q) != 1)
    return false;
  for (int in : pro.inputs)
    if (is_gather(g, in) || written_in_place(g, in)) return false;
  for (int id : pro.steps)  // a factor folded for k that q's chain computes too
    if (std::find(grp.steps.begin(), grp.steps.end(), id) != grp.steps.end()) return false;
  const std::size_t scalars = scalars_of(g, grp.epilogue_steps) + scalars_of(g, pro.steps);
  return epilogue_tensors(grp) + pro.inputs.size() - 1 <= r.epilogue_tensors &&
         scalars <= r.epilogue_scalars;
}

}  // namespace

void load_prologues(const Graph& g, const std::set<int>& needed, std::vector<FusedGroup>& groups) {
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (!groups[k].anchor || !groups[k].anchor->fusion.loads_prologue) continue;
    if (groups[k].inputs.empty() || groups[k].x >= 0) continue;
    const int q = groups[k].inputs[0];
    const int w = writer_of(groups, q);
    if (w < 0) continue;
    FusedGroup pro;
    collect(g, {q}, {}, pro);
    if (!takes(g, needed, groups, groups[k], q, pro)) continue;
    FusedGroup& grp = groups[k];
    grp.x = q;
    grp.inputs[0] = pro.inputs[0];
    grp.extras.assign(pro.inputs.begin() + 1, pro.inputs.end());
    // First: a factor folded into the scale (fold_scales) may multiply the value.
    grp.steps.insert(grp.steps.begin(), pro.steps.begin(), pro.steps.end());
    // The writer keeps its other outputs, computed from memory again; alone, it goes.
    FusedGroup& writer = groups[std::size_t(w)];
    writer.outputs.erase(std::find(writer.outputs.begin(), writer.outputs.end(), q));
    if (writer.outputs.empty()) {
      groups.erase(groups.begin() + w);
      if (std::size_t(w) < k) --k;
      continue;
    }
    const std::vector<int> outputs = writer.outputs;
    writer = FusedGroup();
    writer.outputs = outputs;
    collect(g, outputs, {}, writer);
  }
}

}  // namespace kiln
