// Factors that fold into an anchor's scale (ops::FusionRoles::folds_scale): attention(q * c, k,
// v) is attention(q, k, v) with its scale times c, so the elementwise kernel that would write
// q * c goes, and the attention kernel reads q where it is.
#include <algorithm>
#include <cmath>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using namespace fusion;

// Node `id` as x * f: mul(x, c) or mul(c, x) (f = c), div(x, c) (f = 1 / c), x of its dtype and
// shape; false for any other node, and where f is not finite and above 0 (a negative scale
// takes a slower kernel on sm_90a).
bool scaled(const Graph& g, int id, int& x, double& f) {
  const Graph::Node& n = g.node(id);
  if ((n.op != "mul" && n.op != "div") || n.args.size() != 2) return false;
  for (std::size_t i : {0, 1}) {
    const int* xi = std::get_if<int>(&n.args[i]);
    const double* c = std::get_if<double>(&n.args[1 - i]);
    if (!xi || !c || (n.op == "div" && i == 1)) continue;
    x = *xi;
    f = n.op == "mul" ? *c : 1.0 / *c;
    return g.node(x).dtype == n.dtype && g.node(x).shape == n.shape && std::isfinite(f) && f > 0;
  }
  return false;
}

// The group that computes node `id` alone as an elementwise kernel of its own; -1 if none.
int own_group(const std::vector<FusedGroup>& groups, int id) {
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const FusedGroup& grp = groups[k];
    if (!grp.anchor && grp.part < 0 && grp.steps == std::vector<int>{id} &&
        grp.outputs == std::vector<int>{id})
      return int(k);
  }
  return -1;
}

}  // namespace

double folded_scale(const Graph& g, const FusedGroup& grp) {
  double product = 1;
  int x = -1;
  double f = 1;
  if (grp.anchor && grp.anchor->fusion.folds_scale)
    for (int id : grp.steps)
      if (scaled(g, id, x, f)) product *= f;
  return product;
}

void fold_scales(const Graph& g, const std::set<int>& needed, std::vector<FusedGroup>& groups) {
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (!groups[k].anchor || !groups[k].anchor->fusion.folds_scale) continue;
    for (std::size_t slot : {0, 1}) {
      FusedGroup& grp = groups[k];
      const int id = slot < grp.inputs.size() ? grp.inputs[slot] : -1;
      int x = -1;
      double f = 0;
      // A gather or remap view stays read by the elementwise kernel (attention's read no views
      // at indices).
      if (id < 0 || !scaled(g, id, x, f) || is_gather(g, x) ||
          read_outside(g, needed, groups, grp, id) ||
          std::count(grp.inputs.begin(), grp.inputs.end(), id) != 1)  // q and k one node
        continue;
      const int own = own_group(groups, id);
      if (own < 0) continue;
      grp.inputs[slot] = x;
      grp.steps.push_back(id);
      groups.erase(groups.begin() + own);
      if (std::size_t(own) < k) --k;
    }
  }
}

}  // namespace kiln
